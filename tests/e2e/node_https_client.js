// An HTTPS SSE client in Node.js (OpenSSL linked into the node executable)
// for test_watch_tls.sh: waits until GO_FILE exists (so that tokentap can
// attach to the running process first), then POSTs to https://127.0.0.1:PORT
// with x-request-id RID, and prints "RID INDEX MONO_NS" for every 'data'
// callback (INDEX counts the callbacks; MONO_NS is process.hrtime, i.e.
// CLOCK_MONOTONIC) and the body's bytes at the end as "RID body N".
//
// usage: node node_https_client.js PORT RID GO_FILE
const fs = require("fs");
const https = require("https");
const [port, rid, goFile] = process.argv.slice(2);

function go() {
    const req = https.request({host: "127.0.0.1", port: Number(port), path: "/v1/chat/completions", method: "POST",
                               rejectUnauthorized: false,
                               headers: {"content-type": "application/json", "x-request-id": rid}}, (res) => {
        let n = 0, bytes = 0;
        res.on("data", (chunk) => {
            const now = process.hrtime.bigint();
            bytes += chunk.length;
            console.log(`${rid} ${n++} ${now}`);
        });
        res.on("end", () => console.log(`${rid} body ${bytes}`));
    });
    req.on("error", (e) => { console.error(e.message); process.exit(1); });
    req.end('{"model":"m","stream":true}');
}

const deadline = Date.now() + 10000;
(function wait() {
    if (fs.existsSync(goFile)) return go();
    if (Date.now() > deadline) { console.error("no go file"); process.exit(1); }
    setTimeout(wait, 20);
})();
