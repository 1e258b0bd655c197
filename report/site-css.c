/* site-css.c - the site's one style sheet, site.css (report/site.c
 * writes it; every page links it).  Outcomes are colours and more: each
 * badge has a symbol and a word too (docs/report-site.md). */
#include "report/site-private.h"

const char pgate_report_site__css[] =
	"body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:72em;"
	"padding:0 1em 2em;color:#1f2328;background:#fff}\n"
	"h1{font-size:1.5em;overflow-wrap:anywhere}h2{font-size:1.2em;margin-top:1.5em}\n"
	"nav{margin:.8em 0}nav a{margin-right:.3em}\n"
	"table{border-collapse:collapse;width:100%}\n"
	"th,td{border-bottom:1px solid #d0d7de;padding:4px 6px;text-align:left;"
	"vertical-align:top;overflow-wrap:break-word}\n"
	/* what may break anywhere: IDs, addresses, hashes; never words */
	"td code,td small,.meta td{overflow-wrap:anywhere}td.links{white-space:nowrap}\n"
	"code{overflow-wrap:anywhere}input{max-width:100%;box-sizing:border-box}\n"
	"caption{text-align:left;font-weight:bold;padding:4px 0}\n"
	".scroll{overflow-x:auto}\n"
	".b{display:inline-block;border-radius:4px;padding:0 .35em;font-weight:600;"
	"white-space:nowrap}\n"
	".o-fail{background:#ffebe9;color:#a40e26;border:1px solid #cf222e}\n"
	".o-pass{background:#dafbe1;color:#116329;border:1px solid #1a7f37}\n"
	".o-warn{background:#fff8c5;color:#7d4e00;border:1px solid #9a6700}\n"
	".o-pending{background:#ddf4ff;color:#0550ae;border:1px solid #0969da}\n"
	".o-none{background:#f6f8fa;color:#57606a;border:1px solid #8c959f}\n"
	"tr.r-fail td:first-child{border-left:4px solid #cf222e}\n"
	"tr.r-pass td:first-child{border-left:4px solid #1a7f37}\n"
	"tr.r-warn td:first-child{border-left:4px solid #9a6700}\n"
	"tr.r-pending td:first-child{border-left:4px solid #0969da}\n"
	"tr.r-none td:first-child{border-left:4px solid #8c959f}\n"
	"svg{max-width:100%;height:auto}svg text{font:11px sans-serif;fill:#1f2328}\n"
	".f-fail{fill:#cf222e}.f-pass{fill:#1a7f37}.f-warn{fill:#d4a72c}"
	".f-pending{fill:#0969da}.f-none{fill:#8c959f}\n"
	"pre{overflow-x:auto;background:#f6f8fa;padding:.5em;font-size:13px}\n"
	"pre.log a.n{display:inline-block;min-width:3.5em;color:#57606a;"
	"text-decoration:none;user-select:none}\n"
	"pre.log a.n:target{background:#fff8c5}\n"
	"mark.bad{background:#ffebe9;color:#a40e26}\n"
	/* diffs as git colours them: added, deleted, hunk, meta; a
	 * range-diff's pairs: same (dim), changed, dropped, added */
	".dA{color:#116329}.dD{color:#a40e26}.dH{color:#0550ae}.dM{font-weight:600}"
	".dS{color:#57606a}.dC{color:#7d4e00;font-weight:600}\n"
	".compare{font-weight:600}\n"
	"details.diff summary{cursor:pointer}pre.cover{white-space:pre-wrap;"
	"overflow-wrap:anywhere}\n"
	".superseded{border-left:4px solid #b58900;padding:.3em .6em;background:#fdf6e3}\n"
	".counts span{margin-right:.8em}\n"
	/* the index's checks, and the switch that shows the superseded and
	 * merged series (hidden: a checkbox and this rule, no script) */
	".chk{font-weight:400;font-size:.85em;margin:0 .2em .2em 0}"
	".swf{white-space:nowrap}td.art{white-space:nowrap}\n"
	".show-old:not(:checked)~.scroll tr.old{display:none}\n"
	"ol.timeline li{margin-bottom:.4em}ul.tr,ul.steps{margin:0;padding-left:1em}\n"
	"figure{margin:0}\n"
	/* search.html: the form of combined filters */
	".search p{margin:.4em 0}.search label{display:inline-block;min-width:6em}"
	".search select,.search input{max-width:100%;min-width:12em}"
	".search input{width:24em}.noscript{font-weight:600}\n"
	"@media (max-width:40em){body{font-size:14px;padding:0 .4em}"
	"th,td{padding:3px}.hide-narrow{display:none}"
	"table.meta th{white-space:nowrap}"
	/* a phone: a table's rows become blocks, a cell a line, as in the
	 * index; the column names go (each row says what it is) */
	".scroll thead{position:absolute;left:-9999px}"
	".scroll tr,.scroll td,.scroll tbody th{display:block;border:0}"
	".scroll tr{border-bottom:1px solid #d0d7de;padding:4px 0}"
	".scroll td,.scroll tbody th{padding:1px 6px}"
	"td.links{white-space:normal}}\n";
