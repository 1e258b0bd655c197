// layout.js - injected by t0710 into a copy of a site page: after
// layout, writes on <body data-layout> what is wider than the window
// (the page's own scroll width, and each element that sticks out of it
// or that a scrolling box hides part of), and the words a table cell
// broke inside ("archiv/e").  The site has no script of its own.
// Loaded in an <iframe> of the width to measure (t0710's harness).
addEventListener("load", function () {
	var W = document.documentElement.clientWidth, out = [], hidden = [];
	var broken = [];
	function scroller(e) {
		for (var p = e.parentElement; p; p = p.parentElement) {
			var x = getComputedStyle(p).overflowX;
			if (x === "auto" || x === "scroll" || x === "hidden")
				return p;
		}
		return null;
	}
	function name(e) {
		return e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") +
			(e.className && typeof e.className === "string"
			 ? "." + e.className.split(" ")[0] : "");
	}
	document.querySelectorAll("body *").forEach(function (e) {
		var r = e.getBoundingClientRect(), s = scroller(e);
		if (r.width === 0 || e.tagName === "PRE" || (s && s.tagName === "PRE"))
			return;
		if (s === null && (r.right > W + 1 || r.left < -1))
			out.push(name(e) + ":" + Math.round(r.right));
		else if (s !== null && s.tagName !== "PRE" &&
			 r.right > s.getBoundingClientRect().right + 1)
			hidden.push(name(e) + ":" + Math.round(r.right));
	});
	// a word of a cell broken over two lines: a text node whose letters
	// run on two line boxes with no space between them
	document.querySelectorAll("td, th").forEach(function (c) {
		var w = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
		for (var t; (t = w.nextNode());) {
			var re = /[A-Za-z]{4,}/g, m;
			while ((m = re.exec(t.data)) && broken.length < 10) {
				var rg = document.createRange();
				rg.setStart(t, m.index);
				rg.setEnd(t, m.index + m[0].length);
				if (rg.getClientRects().length > 1)
					broken.push(m[0]);
			}
		}
	});
	var r = JSON.stringify({
		width: W, scroll: document.documentElement.scrollWidth,
		out: out.slice(0, 12), hidden: hidden.slice(0, 12),
		broken: broken});
	document.body.setAttribute("data-layout", r);
	// in t0710's frame of the width measured (a headless window is
	// never narrower than 500 px): to the page that holds it
	if (parent !== window)
		parent.postMessage(r, "*");
});
