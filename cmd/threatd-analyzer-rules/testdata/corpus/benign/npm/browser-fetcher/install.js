const os = require("os");
const path = require("path");
const https = require("https");
const fs = require("fs");
const { execSync } = require("child_process");
const cacheDir = process.env.BROWSER_CACHE_DIR || path.join(os.homedir(), ".cache", "browser-fetcher");
const revision = "1181205";
const url = `https://storage.googleapis.com/chromium-browser-snapshots/Linux_x64/${revision}/chrome-linux.zip`;
const zipPath = path.join(os.tmpdir(), `chrome-${revision}.zip`);
const file = fs.createWriteStream(zipPath);
https.get(url, (res) => {
  res.pipe(file);
  file.on("finish", () => {
    file.close();
    fs.mkdirSync(cacheDir, { recursive: true });
    execSync(`unzip -q -o ${zipPath} -d ${cacheDir}`);
    fs.chmodSync(path.join(cacheDir, "chrome-linux", "chrome"), 0o755);
    fs.unlinkSync(zipPath);
    console.log(`Chromium ${revision} downloaded to ${cacheDir}`);
  });
});
