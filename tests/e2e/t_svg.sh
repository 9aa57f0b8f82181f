#!/usr/bin/env bash
# --format svg writes a flame graph that works in a real browser: a CPU
# capture of the stacks target is opened in headless Chromium (Debian's
# chromium package), driven over the DevTools protocol by a small Python
# script (standard library only, its own websocket client), which checks
# in the rendered page that the hot function's frame is there, that
# hovering it names it, that a real mouse click on it zooms it to the full
# width and hides a frame of another thread, that "Reset Zoom" undoes it,
# that "Search" highlights it, and that the script threw nothing. Without
# chromium the test fails: CI installs it, a silent skip would hide a
# broken flame graph.
. "$(dirname "$0")/lib.sh"

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then
	echo "FAIL: $CHROMIUM not found: the SVG test needs Debian's chromium package" \
		"(apt-get install chromium, or scripts/install-deps test)" >&2
	exit 1
fi

start_target stacks
svg=$WORK/cpu.svg
"$ATTACH" -p "$TPID" -d 2s --format svg -o "$svg" -q || fail "cprof-attach --format svg failed"
if [ ! -s "$svg" ]; then
	fail "no SVG written"
	finish
fi
check "the SVG is well-formed XML" \
	python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$svg"
check "the SVG has a frame for cmp_slow or recurse_bottom" \
	grep -qE '<title>(cmp_slow|recurse_bottom) \(' "$svg"
# no_external FILE: nothing in FILE would load from elsewhere (the image is opened offline).
no_external() {
	! grep -qE '(href|src)="|@import|url\((http|//)' "$1"
}
check "the SVG is self-contained (no external references)" no_external "$svg"

# Chromium in a session of its own, so that its helper processes go with
# it: lib.sh's cleanup kills the whole group ("-PGID") whatever happens.
# Port 0 lets it pick a free port and write it to DevToolsActivePort.
profile_dir=$(mktemp -d "$WORK/chromium.XXXXXX")
setsid "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--disable-extensions --disable-default-apps --mute-audio \
	--user-data-dir="$profile_dir" --remote-debugging-address=127.0.0.1 \
	--remote-debugging-port=0 --window-size=1280,1024 "file://$svg" \
	>"$WORK/chromium.log" 2>&1 &
cpid=$!
PIDS="$PIDS $cpid -$cpid"
port=""
for _ in $(seq 1 300); do
	port=$(head -1 "$profile_dir/DevToolsActivePort" 2>/dev/null)
	[ -n "$port" ] && break
	kill -0 "$cpid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$port" ]; then
	fail "chromium did not open its DevTools port; its log:"
	tail -20 "$WORK/chromium.log" >&2
	finish
fi

# Every check below runs in the browser. The script prints ok:/FAIL: lines
# and exits non-zero when any check failed. SVG_SHOTS=DIR keeps screenshots.
timeout 120 python3 - "$port" "${SVG_SHOTS:-}" <<'PY'
import base64, json, os, socket, struct, sys, time, urllib.request

port, shots = int(sys.argv[1]), sys.argv[2]
failed = False


def report(ok, what):
    global failed
    print(("ok: " if ok else "FAIL: ") + what, flush=True)
    failed |= not ok


class WebSocket:
    """RFC 6455, client side, text frames only: all DevTools needs."""

    def __init__(self, url):
        host, _, path = url[len("ws://"):].partition("/")
        name, _, p = host.partition(":")
        self.sock = socket.create_connection((name, int(p)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n" % (path, host, key)).encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            self.buf += self._recv()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("websocket handshake refused: %r" % head[:100])

    def _recv(self):
        data = self.sock.recv(1 << 16)
        if not data:
            raise RuntimeError("DevTools closed the connection")
        return data

    def _read(self, n):
        while len(self.buf) < n:
            self.buf += self._recv()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text, opcode=1):
        data = text.encode() if isinstance(text, str) else text
        n, mask = len(data), os.urandom(4)
        if n < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        self.sock.sendall(head + mask + bytes(b ^ mask[i & 3] for i, b in enumerate(data)))

    def recv(self):
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7f
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i & 3] for i, b in enumerate(data))
            op = b0 & 0x0f
            if op == 8:
                raise RuntimeError("DevTools closed the websocket")
            if op == 9:
                self.send(data, 10)
            elif op in (0, 1, 2):
                message += data
                if b0 & 0x80:
                    return message.decode()


class DevTools:
    def __init__(self, url):
        self.ws, self.next_id, self.events = WebSocket(url), 0, []

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg["result"]
            self.events.append(msg)

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError("page script failed: %s" % r["exceptionDetails"])
        return r["result"].get("value")

    def click(self, x, y):
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)

    def shot(self, name):
        if shots:
            data = self.call("Page.captureScreenshot", format="png")["data"]
            with open(os.path.join(shots, name + ".png"), "wb") as f:
                f.write(base64.b64decode(data))


page = None
for _ in range(100):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=10) as r:
            page = next((t for t in json.load(r)
                         if t["type"] == "page" and t["url"].endswith(".svg")), None)
    except OSError:
        pass  # not listening yet
    if page:
        break
    time.sleep(0.1)
if not page:
    print("FAIL: the SVG's page never showed up in DevTools")
    sys.exit(1)
dt = DevTools(page["webSocketDebuggerUrl"])
dt.call("Runtime.enable")
dt.call("Page.enable")
# Until the navigation commits, the target already carries the file's URL
# but its document is the initial empty HTML page, complete and truthy: wait
# for the SVG document itself (a loaded CI machine took more than a moment).
loaded = "document.readyState === 'complete' && document.documentElement.localName === 'svg'"
for _ in range(600):
    if dt.js(loaded):
        break
    time.sleep(0.05)
report(dt.js("document.documentElement.localName") == "svg",
       "the browser renders the file as SVG (document %r at %r)"
       % (dt.js("document.documentElement.localName"), dt.js("document.URL")))
if not dt.js(loaded):
    sys.exit(1)

# The page side: frames by their <title>, geometry as rendered.
dt.js(r"""
window.T = {
  frames: function () { return Array.prototype.slice.call(document.querySelectorAll("g.frame")); },
  name: function (g) { var t = g.querySelector("title").textContent; return t.slice(0, t.lastIndexOf(" (")); },
  num: function (g, k) { return +g.getAttribute("data-" + k); },
  width: function (g) { return g.querySelector("rect").getBoundingClientRect().width; },
  // Not in the picture: not rendered, or moved out of the image.
  hidden: function (g) {
    var r = g.querySelector("rect").getBoundingClientRect(), box = document.documentElement.getBoundingClientRect();
    return getComputedStyle(g).display === "none" || r.width === 0 || r.right <= box.left || r.left >= box.right;
  },
  hot: function () {
    var best = null;
    T.frames().forEach(function (g) {
      if (/^(cmp_slow|recurse_bottom)$/.test(T.name(g)) && (!best || T.num(g, "v") > T.num(best, "v"))) best = g;
    });
    return best;
  },
  // The widest frame that is neither an ancestor nor a descendant of the hot one.
  other: function () {
    var h = T.hot(), best = null;
    if (!h) return null;
    var hx = T.num(h, "x"), hv = T.num(h, "v");
    T.frames().forEach(function (g) {
      var x = T.num(g, "x"), v = T.num(g, "v");
      if (x + v <= hx || x >= hx + hv)
        if (!best || v > T.num(best, "v")) best = g;
    });
    return best;
  },
  center: function (g) {
    g.scrollIntoView({ block: "center", inline: "nearest" });
    var r = (g.querySelector("rect") || g).getBoundingClientRect();
    return [r.left + r.width / 2, r.top + r.height / 2];
  },
  state: function () {
    var h = T.hot(), o = T.other();
    return { hot: h && T.name(h), hotWidth: h && T.width(h), hotShare: h && T.num(h, "v") / T.num(T.frames()[0], "v"),
             other: o && T.name(o), otherHidden: o && T.hidden(o), frames: T.frames().length,
             full: T.width(T.frames()[0]), details: document.getElementById("details").textContent,
             unzoomShown: getComputedStyle(document.getElementById("unzoom")).display !== "none",
             matched: document.getElementById("matched").textContent,
             hotFill: h && h.querySelector("rect").getAttribute("fill") };
  }
};
""")
before = dt.js("T.state()")
print("browser: %d frames, hot frame %s %.1f px wide of %.1f, other frame %s"
      % (before["frames"], before["hot"], before["hotWidth"] or 0, before["full"], before["other"]))
report(before["hot"] is not None, "the hot function's frame (cmp_slow or recurse_bottom) is in the page")
if before["hot"] is None:
    sys.exit(1)
report(before["other"] is not None and not before["otherHidden"], "another thread's frame is shown")
report(before["full"] > 1100, "the root frame spans the image (%.1f px)" % before["full"])
dt.shot("before")

x, y = dt.js("T.center(T.hot())")
dt.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
st = dt.js("T.state()")
report(st["details"].startswith("Function: " + before["hot"] + " ("),
       "hovering names the frame in the details line (%r)" % st["details"])

dt.click(x, y)
after = dt.js("T.state()")
dt.shot("zoomed")
report(after["hotWidth"] > 0.98 * before["full"],
       "a click zooms the frame to the full width (%.1f -> %.1f px)"
       % (before["hotWidth"], after["hotWidth"]))
report(after["otherHidden"], "the zoom hides %s, outside the zoomed frame" % before["other"])
report(after["unzoomShown"], "Reset Zoom appears")

x, y = dt.js("T.center(document.getElementById('unzoom'))")
dt.click(x, y)
reset = dt.js("T.state()")
report(abs(reset["hotWidth"] - before["hotWidth"]) < 0.5 and not reset["otherHidden"]
       and not reset["unzoomShown"], "Reset Zoom restores the graph (%.1f px)" % reset["hotWidth"])

dt.js("window.prompt = function () { return '^(cmp_slow|recurse_bottom)$'; }")
x, y = dt.js("T.center(document.getElementById('search'))")
dt.click(x, y)
found = dt.js("T.state()")
dt.shot("search")
share = found["matched"].partition("Matched: ")[2].partition("%")[0]
report(found["hotFill"] == "rgb(230,0,230)", "Search highlights the hot frame")
report(share != "" and before["hotShare"] * 100 - 0.01 <= float(share) <= 100,
       "Search reports the matched share (%s)" % found["matched"])

errors = [e for e in dt.events if e.get("method") == "Runtime.exceptionThrown"]
report(not errors, "the page's script threw no exception %s" % (errors[:1] or ""))
try:
    dt.call("Browser.close")
except Exception:
    pass
sys.exit(1 if failed else 0)
PY
rc=$?
[ "$rc" = 0 ] || fail "the flame graph does not work in the browser (exit $rc)"
finish
