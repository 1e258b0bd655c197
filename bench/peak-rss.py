#!/usr/bin/python3
"""peak-rss.py CMD... - runs CMD and prints its peak anonymous and
file-backed resident memory, sampled from /proc every 5 ms.

/usr/bin/time's peak RSS adds both.  For patchgate the file-backed part is
LMDB's memory map: pages of the store that were read, which the kernel can
drop at any time and which grow with the store.  The anonymous part is
what patchgate itself allocates, which must stay bounded."""
import subprocess
import sys
import time

p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
peak = {'RssAnon': 0, 'RssFile': 0, 'VmRSS': 0}
while p.poll() is None:
    try:
        with open('/proc/%d/status' % p.pid) as f:
            for line in f:
                k = line.split(':')[0]
                if k in peak:
                    peak[k] = max(peak[k], int(line.split()[1]))
    except OSError:
        pass
    time.sleep(0.005)
print('anonymous %.1f MB, file-backed %.1f MB, total %.1f MB' %
      (peak['RssAnon'] / 1024, peak['RssFile'] / 1024, peak['VmRSS'] / 1024))
sys.exit(p.returncode)
