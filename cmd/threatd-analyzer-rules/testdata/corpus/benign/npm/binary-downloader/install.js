const fs = require("fs");
const os = require("os");
const path = require("path");
const https = require("https");
const zlib = require("zlib");
const child_process = require("child_process");
const version = require("./package.json").version;
const platform = `${process.platform}-${os.arch()}`;
const binPath = path.join(__dirname, "bin", "tool");
function fetch(url) {
  return new Promise((resolve, reject) => {
    https.get(url, (res) => {
      if ((res.statusCode === 301 || res.statusCode === 302) && res.headers.location) return fetch(res.headers.location).then(resolve, reject);
      if (res.statusCode !== 200) return reject(new Error(`Server responded with ${res.statusCode}`));
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve(Buffer.concat(chunks)));
    }).on("error", reject);
  });
}
async function install() {
  const url = `https://registry.npmjs.org/@tool/${platform}/-/${platform}-${version}.tgz`;
  const tgz = await fetch(url);
  fs.mkdirSync(path.dirname(binPath), { recursive: true });
  fs.writeFileSync(binPath, extract(zlib.unzipSync(tgz), "package/bin/tool"));
  fs.chmodSync(binPath, 0o755);
  const out = child_process.execFileSync(binPath, ["--version"], { stdio: "pipe" }).toString().trim();
  if (out !== version) throw new Error(`Expected ${JSON.stringify(version)} but got ${JSON.stringify(out)}`);
}
function extract(buf, subpath) { return buf; }
install().catch((e) => { console.error(e); process.exit(1); });
