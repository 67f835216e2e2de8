const http = require("http");
const https = require("https");
function proxyFor(url) { return process.env.HTTPS_PROXY || process.env.https_proxy || process.env.HTTP_PROXY || ""; }
function request(url, opts = {}) {
  const lib = url.startsWith("https:") ? https : http;
  return new Promise((resolve, reject) => {
    const req = lib.request(url, { method: opts.method || "GET", headers: opts.headers || {} }, (res) => {
      const chunks = []; res.on("data", (c) => chunks.push(c)); res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    if (opts.body) req.write(opts.body);
    req.end();
  });
}
module.exports = { request, proxyFor };
