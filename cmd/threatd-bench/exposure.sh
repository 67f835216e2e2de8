# Exposure (docs/exposure.md) in make bench-scale, SQLite: sourced by
# bench-scale.sh inside its loop (its variables: WORK, D, CFG, BIN, S, T,
# FWDOC, FWFILE, backend, BENCH_TOKEN, BENCH_ADMIN_TOKEN; wrk_run, res).
#
# 1. 2,000 served 1 KB tarballs a second for 60 s, the document measured
#    beside them, then the ledger's counts summed.
# 2. The ledger on and off, side by side: a second daemon on a copy of the
#    database (SQLite's online backup), with firewall.ledger off, on
#    ports of its own; the trivial handler, the daemon with the ledger and
#    the one without alternate, three rounds, on the cached document, the
#    16 MiB tarball and the 1 KB one.
# 3. A million ledger rows of one version (10,000 tokens, 89 days), a
#    report of it verified: the time until its exposures are recorded and
#    listed; GET /exposure pages.
# 4. The ledger filled to 10,000,000 rows: the administrators' exposure
#    page (a web session) and GET /exposure, p99; a report of a package
#    with rows among the ten million, the time until its exposures.
echo "== $backend: exposure"
FWTINY=/functions/v1/firewall/npm/fw-tiny/-/fw-tiny-1.0.0.tgz
curl -sk -H "Authorization: Bearer $BENCH_TOKEN" "$S$FWTINY" -o "$D/fw/tiny.tgz"
sleep 2
tiny_sum() { python3 -c "import sqlite3,sys; print(sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True).execute(\"SELECT coalesce(sum(count),0) FROM firewall_ledger WHERE name = 'fw-tiny'\").fetchone()[0])" "$D/data/threatd.db"; }
tiny_before=$(tiny_sum)   # a reused database has the last runs' counts
"$WORK/threatd-bench" blocked -url "$S$FWTINY" -token "$BENCH_TOKEN" -rate "${BENCH_BLOCKED_RATE:-2000}" -duration 60s > "$WORK/served-$backend.txt" & server=$!
sleep 5
BENCH_PATH=/files/rendered.json wrk_run "$backend-fwdoc-trivial-ledger" 32 "$T" "$WORK/get.lua"
BENCH_PATH=$FWDOC wrk_run "$backend-fwdoc-ledger" 32 "$S" "$WORK/get.lua"
wait $server
sleep 3   # the ledger writes every second
ledger_counted=$(( $(tiny_sum) - tiny_before ))

echo "== $backend: the ledger on and off"
OFF=$D/off
S_OFF=https://127.0.0.1:18453
rm -rf "$OFF"; mkdir -p "$OFF/data"
python3 -c "import sqlite3, sys; sqlite3.connect(sys.argv[1], timeout=60).backup(sqlite3.connect(sys.argv[2]))" "$D/data/threatd.db" "$OFF/data/threatd.db"
sed -e "s|^data_dir: .*|data_dir: $OFF/data|" -e 's|127.0.0.1:18443|127.0.0.1:18453|' -e 's|127.0.0.1:19464|127.0.0.1:19474|' \
  -e 's|127.0.0.1:18446|127.0.0.1:18456|' -e 's|^firewall:$|firewall:\n  ledger: false|' "$CFG" > "$OFF/threatd.yaml"
"$BIN" serve --config "$OFF/threatd.yaml" 2>"$OFF/serve.log" & offd=$!
until curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $BENCH_TOKEN" "$S_OFF/healthz" 2>/dev/null | grep -q 200; do sleep 0.5; done
# Its start-up's background work (the index spill, SQLite's integrity
# check) takes a core: waited for, as for the first daemon.
for _ in $(seq 1 1200); do grep -q '"index spill filled"' "$OFF/serve.log" && grep -q 'integrity check' "$OFF/serve.log" &&
  grep -q '"exposure: looked at the changes made before the start"' "$OFF/serve.log" && break; sleep 0.5; done
curl -sk -H "Authorization: Bearer $BENCH_TOKEN" -H "Accept: application/vnd.npm.install-v1+json" "$S_OFF$FWDOC" -o /dev/null
curl -sk -H "Authorization: Bearer $BENCH_TOKEN" "$S_OFF$FWFILE" -o /dev/null
curl -sk -H "Authorization: Bearer $BENCH_TOKEN" "$S_OFF$FWTINY" -o /dev/null
for round in 1 2 3; do
  for what in doc:32:/files/rendered.json:$FWDOC file:4:/files/file.tgz:$FWFILE tiny:32:/files/tiny.tgz:$FWTINY; do
    IFS=: read -r name conns trivial path <<< "$what"
    BENCH_PATH=$trivial wrk_run "$backend-onoff-$name-trivial-$round" "$conns" "$T" "$WORK/get.lua"
    # Each round in the other order: neither daemon always goes first.
    if [ "$round" = 2 ]; then order="off on"; else order="on off"; fi
    for which in $order; do
      url=$S; [ "$which" = off ] && url=$S_OFF
      BENCH_PATH=$path wrk_run "$backend-onoff-$name-$which-$round" "$conns" "$url" "$WORK/get.lua"
    done
  done
done
kill $offd 2>/dev/null; wait $offd 2>/dev/null || true
# For each artifact: the median of the rounds' ratios to the trivial
# handler, with and without the ledger, and their quotient.
ledger_onoff=$(python3 - "$WORK" "$backend" <<'PY'
import statistics, sys
work, backend = sys.argv[1], sys.argv[2]
rps = lambda n: float(open("%s/res-%s-%s" % (work, backend, n)).read().split()[0] or 0)
for name, label, conns in [("doc", "200-version npm document", 32), ("file", "16 MiB tarball", 4), ("tiny", "1 KB tarball (each one a ledger count)", 32)]:
    on = [rps("onoff-%s-on-%d" % (name, r)) / rps("onoff-%s-trivial-%d" % (name, r)) for r in (1, 2, 3)]
    off = [rps("onoff-%s-off-%d" % (name, r)) / rps("onoff-%s-trivial-%d" % (name, r)) for r in (1, 2, 3)]
    a, b = statistics.median(on), statistics.median(off)
    print("| firewall, %s, %d conns: vs the trivial handler with the ledger / without (median of 3 rounds) | %.0f %% / %.0f %%: with is %.1f %% of without (rounds: %s) |"
          % (label, conns, 100 * a, 100 * b, 100 * a / b, ", ".join("%.0f/%.0f" % (100 * x, 100 * y) for x, y in zip(on, off))))
PY
)

# A package of this run's own (a report per package: a reused database
# has the last run's), its rows within the ledger's 90 days.
EXP_PKG=fw-exp-$(date +%s)
python3 - "$D/data/threatd.db" "$EXP_PKG" <<'PY'
import sqlite3, sys
from datetime import datetime, timedelta, timezone
db = sqlite3.connect(sys.argv[1], timeout=60)
db.execute("PRAGMA busy_timeout = 60000")
name = sys.argv[2]
today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
rows = ((f"tok-{i % 10000}", f"10.{(i // 10000) % 250}.{i % 250}.1", (today - timedelta(days=(i // 10000) % 89)).strftime("%Y-%m-%d %H:%M:%S+00:00")) for i in range(1_000_000))
db.executemany("INSERT OR IGNORE INTO firewall_ledger (ecosystem, name, version, purl, user_email, token_id, client_ip, day, first_at, last_at, count) VALUES ('npm', ?, '1.0.0', ?, 'bench@example.com', ?, ?, ?, ?, ?, 1)",
               ((name, "pkg:npm/%s@1.0.0" % name, t, ip, d, d, d) for t, ip, d in rows))
db.commit()
print(db.execute("SELECT count(*) FROM firewall_ledger WHERE name = ?", (name,)).fetchone()[0], file=sys.stderr)
PY
# A report verified: the time until its exposures are recorded (counted in
# the database) and until GET /exposure lists a full first page.
exposure_of() {
  local name=$1 version=$2 want=$3 id start found="" listed=""
  id=$(curl -sk -H "Authorization: Bearer $BENCH_ADMIN_TOKEN" -H "Content-Type: application/json" \
    -d "{\"report_type\":\"package\",\"resource_identifier\":\"$name\",\"registry\":\"npm\",\"threat_description\":\"Steals tokens at install\",\"version_info\":\"$version\"}" \
    "$S/functions/v1/submit-threat-report" | python3 -c "import json,sys; print(json.load(sys.stdin)['threat_id'])")
  start=$(date +%s.%N)
  "$BIN" review verify --config "$CFG" "$id" >/dev/null
  for _ in $(seq 1 600); do
    n=$(python3 -c "import sqlite3,sys; print(sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True).execute('SELECT count(*) FROM exposures WHERE threat_id = ?', (sys.argv[2],)).fetchone()[0])" "$D/data/threatd.db" "$id" 2>/dev/null || echo 0)
    if [ -z "$found" ] && [ "${n:-0}" -ge "$want" ]; then found=$(python3 -c "import time; print('%.1f' % (time.time() - $start))"); fi
    if [ -z "$listed" ] && curl -sk -H "Authorization: Bearer $BENCH_ADMIN_TOKEN" "$S/functions/v1/exposure?threat_id=$id&limit=100" | grep -q "\"count\":$(( want < 100 ? want : 100 ))"; then
      listed=$(python3 -c "import time; print('%.1f' % (time.time() - $start))"); fi
    [ -n "$found" ] && [ -n "$listed" ] && break
    sleep 0.5
  done
  echo "$id ${found:-none} ${listed:-none}"
}
read -r exp_id exp_found exp_listed < <(exposure_of "$EXP_PKG" 1.0.0 1000000)
echo "/functions/v1/exposure?limit=100" > "$WORK/exposure-paths.txt"
echo "/functions/v1/exposure?threat_id=$exp_id&limit=100&cursor=500000" >> "$WORK/exposure-paths.txt"
BENCH_PATHS=$WORK/exposure-paths.txt wrk_run "$backend-exposure" 8 "$S" "$WORK/decisions.lua"

echo "== $backend: a ledger of 10 M rows"
fill_start=$(date +%s.%N)
# 100,000 packages, 7 versions, 10,000 tokens, 90 days; 500,000 rows a
# transaction (the daemon writes between them).
python3 - "$D/data/threatd.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=120)
db.execute("PRAGMA busy_timeout = 120000")
have = db.execute("SELECT count(*) FROM firewall_ledger").fetchone()[0]
i = 0
while have < 10_000_000:
    n = min(500_000, 10_000_000 - have)
    db.execute("""WITH RECURSIVE s(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM s WHERE i < ?)
INSERT OR IGNORE INTO firewall_ledger (ecosystem, name, version, purl, user_email, token_id, client_ip, day, first_at, last_at, count)
SELECT 'npm', 'led-' || (i % 100000), '1.0.' || (i % 7), 'pkg:npm/led-' || (i % 100000) || '@1.0.' || (i % 7), 'u' || (i % 500) || '@example.com',
  'tok-' || (i % 10000), printf('10.%d.%d.%d', (i >> 16) & 255, (i >> 8) & 255, i & 255),
  strftime('%Y-%m-%d 00:00:00+00:00', 'now', '-' || (i % 90) || ' days'), strftime('%Y-%m-%d 00:00:00+00:00', 'now', '-' || (i % 90) || ' days'),
  strftime('%Y-%m-%d 00:00:00+00:00', 'now', '-' || (i % 90) || ' days'), 1 + i % 5 FROM s""", (i, i + n - 1))
    db.commit()
    i += n
    have = db.execute("SELECT count(*) FROM firewall_ledger").fetchone()[0]
db.execute("ANALYZE firewall_ledger")
print(have, file=sys.stderr)
PY
ledger_fill=$(python3 -c "print('%.0f s' % ($(date +%s.%N) - $fill_start))")
ledger_rows=$(python3 -c "import sqlite3,sys; print(sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True).execute('SELECT count(*) FROM firewall_ledger').fetchone()[0])" "$D/data/threatd.db")
# A package among the ten million not reported before (a reused database
# has the last runs' reports): its 1.0.0's rows.
LED_PKG=led-$(( $(date +%s) % 100000 ))
led_want=$(python3 -c "import sqlite3,sys; print(sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True).execute(\"SELECT count(*) FROM firewall_ledger WHERE ecosystem = 'npm' AND name = ? AND version = '1.0.0'\", (sys.argv[2],)).fetchone()[0])" "$D/data/threatd.db" "$LED_PKG")
read -r _ led_found led_listed < <(exposure_of "$LED_PKG" 1.0.0 "$led_want")
# The administrators' page, logged in (a session cookie and its CSRF token).
BENCH_ADMIN_PASSWORD="bench-admin correct horse"
echo "$BENCH_ADMIN_PASSWORD" | "$BIN" user set-password --config "$CFG" --email bench-admin@example.com >/dev/null
jar=$WORK/admin-cookies.txt; rm -f "$jar"
curl -sk -c "$jar" -b "$jar" "$S/login" -o "$WORK/login.html"
csrf=$(grep -o 'name="csrf_token" value="[^"]*"' "$WORK/login.html" | sed 's/.*value="//; s/"$//')
login=$(curl -sk -c "$jar" -b "$jar" -o /dev/null -w '%{http_code}' --data-urlencode "email=bench-admin@example.com" \
  --data-urlencode "password=$BENCH_ADMIN_PASSWORD" --data-urlencode "csrf_token=$csrf" "$S/login")
export BENCH_COOKIE; BENCH_COOKIE=$(awk '$6 ~ /threatd_session$/ {print $6 "=" $7}' "$jar")
after=$(curl -sk -b "$jar" "$S/admin/exposure" | grep -o 'after=[0-9]*' | head -1)
printf '/admin/exposure\n/admin/exposure?%s\n' "$after" > "$WORK/admin-exposure-paths.txt"
cat > "$WORK/session.lua" <<'EOF'
local COOKIE, paths = os.getenv("BENCH_COOKIE"), {}
for l in io.lines(os.getenv("BENCH_PATHS")) do paths[#paths + 1] = l end
math.randomseed(os.time())
request = function() return wrk.format("GET", paths[math.random(1, #paths)], {["Cookie"] = COOKIE}) end
EOF
admin_page=$(curl -sk -b "$jar" -o /dev/null -w '%{http_code}' "$S/admin/exposure")
BENCH_PATHS=$WORK/admin-exposure-paths.txt wrk_run "$backend-admin-exposure" 8 "$S" "$WORK/session.lua"
BENCH_PATHS=$WORK/exposure-paths.txt wrk_run "$backend-exposure-10m" 8 "$S" "$WORK/decisions.lua"
