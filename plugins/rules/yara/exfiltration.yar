// threatd's rules: secrets sent away. Written for threatd from published
// techniques (environment and token stealers, webhook and DNS exfiltration,
// wallet and browser-data theft). Each rule wants what is taken and a way
// out in the same file.

rule threatd_env_dump_sent
{
    meta:
        severity = "high"
        description = "sends the whole environment (its tokens and keys) over the network"
    strings:
        $js_env = /JSON\.stringify\s*\(\s*(\{\s*(env\s*:\s*)?)?process\.env\b/
        $py_env = /(json\.dumps|str|repr)\s*\(\s*(dict\s*\(\s*)?os\.environ\s*\)?\s*\)/
        $js_net = /\b(https?\.(request|get)|fetch|axios(\.post)?|needle|got\.post|XMLHttpRequest|dns\.(lookup|resolve\w*)|net\.(connect|createConnection|Socket))\s*\(/
        $py_net = /\b(requests\.(post|get|put)|urllib\.request\.(urlopen|Request)|urlopen|http\.client\.HTTPS?Connection|socket\.(socket|create_connection)|httpx\.(post|get))\s*\(/
    condition:
        (for any i in (1..#js_env) : ( for any j in (1..#js_net) : ( @js_net[j] > @js_env[i] - 3000 and @js_net[j] < @js_env[i] + 3000 ) ))
        or (for any i in (1..#py_env) : ( for any j in (1..#py_net) : ( @py_net[j] > @py_env[i] - 3000 and @py_net[j] < @py_env[i] + 3000 ) ))
}

rule threatd_credential_files_sent
{
    meta:
        severity = "critical"
        description = "reads credential files (npm, SSH, cloud, Git, Docker, Kubernetes) and sends them over the network"
    strings:
        $c1 = ".npmrc"
        $c2 = /\.ssh[\/\\'"\s,]+(id_(rsa|ed25519|ecdsa|dsa))/
        $c3 = /\.aws[\/\\'"\s,]+credentials/
        $c4 = ".git-credentials"
        $c5 = /\.docker[\/\\'"\s,]+config\.json/
        $c6 = /\.kube[\/\\'"\s,]+config/
        $c7 = /\.config[\/\\'"\s,]+gh[\/\\'"\s,]+hosts\.yml/
        $c8 = /\.pypirc\b/
        $c9 = /\.gem[\/\\'"\s,]+credentials/
        $c10 = /\.cargo[\/\\'"\s,]+credentials/
        $c11 = /application_default_credentials\.json/
        $net = /\b(https?\.(request|get)|fetch|axios(\.post)?|XMLHttpRequest|requests\.(post|get|put)|urlopen|Net::HTTP|http\.Post|http\.NewRequest|reqwest|dns\.(lookup|resolve\w*)|socket\.(socket|create_connection)|net\.(connect|createConnection|Socket))\b/
        $read = /\b(readFileSync|readFile|createReadStream|read_text|File\.read|IO\.read|fs::read_to_string|ioutil\.ReadFile|os\.ReadFile)\b|\bopen\s*\(/
    condition:
        $read and $net and 2 of ($c*)
}

rule threatd_webhook_exfil
{
    meta:
        severity = "high"
        description = "posts to a hard-coded chat webhook or request collector, the usual drop of stolen data"
    strings:
        $discord = /discord(app)?\.com\/api\/webhooks\/[0-9]{6,}\/[A-Za-z0-9_-]{20,}/
        $telegram = /api\.telegram\.org\/bot[0-9]{6,}:[A-Za-z0-9_-]{20,}/
        $slack = /hooks\.slack\.com\/services\/T[A-Z0-9]{6,}\/B[A-Z0-9]{6,}\/[A-Za-z0-9]{16,}/
        $collector = /https?:\/\/[A-Za-z0-9.-]*\b(webhook\.site|pipedream\.net|requestbin\.(com|net)|requestcatcher\.com|beeceptor\.com|interact\.sh|oast\.(fun|me|pro|live|site|online)|burpcollaborator\.net|canarytokens\.com|ngrok(-free)?\.(io|app)|trycloudflare\.com|hookbin\.com|ipinfo\.io\/json)\b/
    condition:
        any of them
}

rule threatd_host_fingerprint_sent
{
    meta:
        severity = "high"
        description = "collects who and where it runs (user, host, home, network) and sends it away encoded: a dependency-confusion beacon"
    strings:
        $h = /os\.(hostname|userInfo|homedir|networkInterfaces)\s*\(\s*\)|(socket\.gethostname|getpass\.getuser|platform\.node|os\.getlogin)\s*\(\s*\)/
        $enc = /\.toString\s*\(\s*['"](hex|base64)['"]\s*\)|binascii\.hexlify|\.hex\s*\(\s*\)|base64\.(b64encode|b32encode)/
        $out = /\b(dns\.(lookup|resolve\w*)|socket\.gethostbyname|dns\.resolver\.(resolve|query)|https?\.request|fetch|axios\.post|requests\.(post|get)|urlopen)\s*\(/
    condition:
        for any i in (1..#h) : (
            (for 1 j in (1..#h) : ( @h[j] != @h[i] and @h[j] > @h[i] - 400 and @h[j] < @h[i] + 400 )) and
            (for any j in (1..#enc) : ( @enc[j] > @h[i] - 600 and @enc[j] < @h[i] + 600 )) and
            (for any j in (1..#out) : ( @out[j] > @h[i] - 1200 and @out[j] < @h[i] + 1200 ))
        )
}

rule threatd_dns_exfil
{
    meta:
        severity = "high"
        description = "encodes data into DNS names it looks up: exfiltration through DNS"
    strings:
        $lookup_tpl = /dns\.(lookup|resolve\w*)\s*\(\s*`\$\{[^`\n]{1,200}\}\.[A-Za-z0-9.-]+\.[a-z]{2,}`/
        $lookup_cat = /dns\.(lookup|resolve\w*)\s*\([^\n]{0,120}(toString\s*\(\s*['"]hex['"]\s*\)|\.hex\s*\(\s*\))[^\n]{0,120}\+\s*['"]\.[A-Za-z0-9.-]+['"]/
        $py = /(gethostbyname|resolver\.(resolve|query))\s*\([^\n]{0,200}(hexlify|\.hex\(\)|b32encode|b64encode)/
        $dnsany = /\bdns\.(lookup|resolve\w*)\s*\(/
        $enc = /toString\s*\(\s*['"]hex['"]\s*\)/
        $chunk = /\.(match|slice|substr(ing)?)\s*\([^\n]{0,40}(60|62|63)\b/
    condition:
        $lookup_tpl or $lookup_cat or $py or
        (for any i in (1..#dnsany) : (
            (for any j in (1..#enc) : ( @enc[j] > @dnsany[i] - 600 and @enc[j] < @dnsany[i] + 600 )) and
            (for any j in (1..#chunk) : ( @chunk[j] > @dnsany[i] - 600 and @chunk[j] < @dnsany[i] + 600 ))
        ))
}

rule threatd_wallet_theft
{
    meta:
        severity = "critical"
        description = "reads crypto wallets (browser extensions' storage, desktop wallets, keys) where a package has no business"
    strings:
        $w1 = "nkbihfbeogaeaoehlefnkodbefgpgknn"
        $w2 = "bfnaelmomeimhlpmgjnjophhpkkoljpa"
        $w3 = "hnfanknocfeofbddgcijnmhnfnkdnaad"
        $w4 = "fhbohimaelbohpjbbldcngcnapndodjp"
        $w5 = "ibnejdfjmmkpcnlpebklmnkoeoihofec"
        $w6 = /Exodus[\/\\]+exodus\.wallet/ nocase
        $w7 = /Electrum[\/\\]+wallets/ nocase
        $w8 = /\.config[\/\\]+solana[\/\\]+id\.json/
        $w9 = /atomic[\/\\]+Local Storage[\/\\]+leveldb/ nocase
        $w10 = /Ethereum[\/\\]+keystore/
        $w11 = /(wallet\.dat|Bitcoin[\/\\]+wallets)/
        $w12 = /com\.liberty\.jaxx|Guarda[\/\\]+Local Storage|Coinomi[\/\\]+wallets/
    condition:
        2 of them
}

rule threatd_browser_data_theft
{
    meta:
        severity = "critical"
        description = "reads browsers' saved passwords, cookies or Discord tokens"
    strings:
        $b1 = /(Google[\/\\]+Chrome|BraveSoftware[\/\\]+Brave-Browser|Microsoft[\/\\]+Edge|Opera Software)[\/\\]+[^'"\n]{0,40}(Login Data|Cookies|Local State|Web Data)/
        $b2 = /["'](Login Data|Local State)["']/
        $b3 = /discord(canary|ptb)?[\/\\]+Local Storage[\/\\]+leveldb/ nocase
        $b4 = /\[\\w-\]\{24\}\\\.\[\\w-\]\{6\}\\\.\[\\w-\]\{27\}|mfa\\\.\[\\w-\]\{84\}/
        $b5 = /CryptUnprotectData|win32crypt|os_crypt\.encrypted_key|encrypted_key/
        $b6 = /firefox[\/\\]+Profiles|logins\.json[^\n]{0,80}key4\.db/ nocase
    condition:
        2 of them
}

rule threatd_address_swap
{
    meta:
        severity = "critical"
        description = "swaps crypto addresses in the page or clipboard for the attacker's (a wallet drainer)"
    strings:
        $eth = /["']0x[a-fA-F0-9]{40}["']/
        $btc = /["'](bc1[a-z0-9]{38,58}|[13][a-km-zA-HJ-NP-Z1-9]{25,34})["']/
        $hook1 = /window\.ethereum\b/
        $hook2 = /XMLHttpRequest\.prototype\.(open|send)\s*=/
        $hook3 = /(window|globalThis)\.fetch\s*=/
        $hook4 = /navigator\.clipboard\.writeText|clipboardy|pbcopy|clip\.exe/
        $lev = /levenshtein/ nocase
    condition:
        (#eth + #btc >= 20) and (any of ($hook*)) or (#eth + #btc >= 5 and $lev and any of ($hook*))
}

rule threatd_credential_file_sent
{
    meta:
        severity = "high"
        description = "reads a credential file from the user's home and sends data over the network"
    strings:
        $c = /['"`\/\\](\.npmrc|\.git-credentials|\.pypirc|id_rsa|id_ed25519)['"`]|\.aws[\/\\'"\s,]+credentials|\.docker[\/\\'"\s,]+config\.json|solana[\/\\'"\s,]+id\.json/
        $home = /os\.homedir\s*\(\s*\)|process\.env\.(HOME|USERPROFILE)\b|expanduser\s*\(\s*['"]~|Path\.home\s*\(\s*\)|Dir\.home|ENV\[['"]HOME['"]\]|os\.UserHomeDir\s*\(\s*\)|dirs::home_dir/
        $read = /\b(readFileSync|readFile|createReadStream|read_text|File\.read|IO\.read|fs::read_to_string|os\.ReadFile)\b|\bopen\s*\(/
        $send = /\b(https?\.request|fetch|axios\.post|XMLHttpRequest|requests\.post|urlopen|Net::HTTP\.post|http\.Post|dns\.(lookup|resolve\w*)|socket\.send)\s*\(/
    condition:
        for any i in (1..#c) : (
            (for any j in (1..#home) : ( @home[j] > @c[i] - 300 and @home[j] < @c[i] + 300 )) and
            (for any j in (1..#read) : ( @read[j] > @c[i] - 300 and @read[j] < @c[i] + 300 )) and
            (for any j in (1..#send) : ( @send[j] > @c[i] - 2000 and @send[j] < @c[i] + 2000 ))
        )
}

rule threatd_clipboard_address_swap
{
    meta:
        severity = "critical"
        description = "watches the clipboard for crypto addresses and replaces them (a clipper)"
    strings:
        $read = /pyperclip\.paste|clipboard\.paste|navigator\.clipboard\.readText|GetClipboardData|clipboardy\.read|Clipboard\.GetText/
        $write = /pyperclip\.copy|clipboard\.copy|navigator\.clipboard\.writeText|SetClipboardData|clipboardy\.write|Clipboard\.SetText/
        $re_btc = /\(bc1\|\[13\]\)|\^\(bc1|\[13\]\[a-km-zA-HJ-NP-Z1-9\]\{2[0-9],3[0-9]\}/
        $re_eth = /0x\[a-fA-F0-9\]\{40\}/
    condition:
        $read and $write and ($re_btc or $re_eth)
}

rule threatd_private_key_harvest
{
    meta:
        severity = "critical"
        description = "searches files for crypto private keys and sends what it finds"
    strings:
        $b58 = /\[1-9A-HJ-NP-Za-km-z\]\{(6[0-9]|8[0-9])(,[0-9]+)?\}/
        $hex = /0x\[a-fA-F0-9\]\{64\}|\[0-9a-fA-F\]\{64\}/
        $walk = /(read_dir|WalkDir|walkdir|os\.walk|readdirSync|glob\s*\(|Dir\.glob)/
        $send = /(reqwest|ureq|\.post\s*\(|fetch\s*\(|requests\.post|https?\.request|Net::HTTP)/
    condition:
        ($b58 or $hex) and $walk and $send
}

rule threatd_token_env_sent
{
    meta:
        severity = "high"
        description = "reads several CI and cloud secrets from the environment and sends them to a host of its own"
    strings:
        $t1 = /\b(NPM_TOKEN|NODE_AUTH_TOKEN|NPM_AUTH_TOKEN)\b/
        $t2 = /\b(GITHUB_TOKEN|GH_TOKEN|GH_PAT)\b/
        $t3 = /\bAWS_SECRET_ACCESS_KEY\b/
        $t4 = /\b(PYPI_TOKEN|TWINE_PASSWORD|PYPI_API_TOKEN)\b/
        $t5 = /\b(CI_JOB_TOKEN|GITLAB_TOKEN|CIRCLE_TOKEN)\b/
        $t6 = /\b(AZURE_CLIENT_SECRET|GOOGLE_APPLICATION_CREDENTIALS|GCP_SERVICE_ACCOUNT)\b/
        $t7 = /\b(OPENAI_API_KEY|ANTHROPIC_API_KEY|SLACK_TOKEN|DISCORD_TOKEN)\b/
        $send = /\b(fetch|https?\.request|axios\.post|requests\.post|urlopen|Net::HTTP\.post)\s*\(\s*['"`]https?:\/\/[A-Za-z0-9.-]+/
        $known = /api\.github\.com|registry\.npmjs\.org|amazonaws\.com|upload\.pypi\.org|gitlab\.com\/api|googleapis\.com|api\.openai\.com|slack\.com\/api/
    condition:
        3 of ($t*) and $send and not $known
}
