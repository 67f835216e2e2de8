// threatd's rules: code fetched from the network and run.
// Written for threatd from published techniques (npm, PyPI, RubyGems and
// crates.io incidents, 2018-2025): droppers at install, remote code run at
// import. Each rule wants a capability and a threat indicator together.

rule threatd_shell_pipe_download
{
    meta:
        scope = "install"
        severity = "critical"
        description = "downloads a script and pipes it to a shell (curl | sh)"
    strings:
        $pipe = /\b(curl|wget)\b[^\n|;]{1,300}\|\s*(sudo\s+)?(\/bin\/|\/usr\/bin\/)?(ba|z|da)?sh\b/
        $pipe_py = /\b(curl|wget)\b[^\n|;]{1,300}\|\s*python[0-9.]*\b/
        $chain = /\b(curl|wget)\b[^\n]{1,300}(-o|-O|--output)\s*[^\n]{1,120}(&&|;)\s*chmod\s+(\+x|[0-7]{3,4})\s[^\n]{1,200}(&&|;)\s*[^\n]{0,40}(\.\/|\/tmp\/|\$TMPDIR|\/dev\/shm\/)/
    condition:
        any of them
}

rule threatd_windows_download_exec
{
    meta:
        severity = "critical"
        description = "fetches and runs code the way Windows droppers do (PowerShell download cradle, certutil, bitsadmin, mshta)"
    strings:
        $ps1 = /powershell(\.exe)?[^\n]{0,200}(-e(nc|ncodedcommand)?\s+[A-Za-z0-9+\/=]{40,})/ nocase
        $ps2 = /(IEX|Invoke-Expression)\s*\(?\s*(\(?New-Object\s+(System\.)?Net\.WebClient\)?|\(?iwr|\(?Invoke-WebRequest|\(?irm|\(?Invoke-RestMethod)/ nocase
        $ps3 = /\.Download(String|File|Data)\s*\(\s*['"]https?:\/\/[^\n]{0,300}(Start-Process|IEX|Invoke-Expression|\.exe)/ nocase
        $certutil = /certutil(\.exe)?\s+[^\n]{0,40}-urlcache\s+[^\n]{0,40}-f\s+https?:/ nocase
        $bits = /bitsadmin(\.exe)?\s+\/transfer\s+[^\n]{0,200}https?:/ nocase
        $mshta = /mshta(\.exe)?\s+["']?(https?|vbscript|javascript):/ nocase
    condition:
        any of them
}

rule threatd_remote_code_eval
{
    meta:
        severity = "critical"
        description = "runs code it downloads (the answer of an HTTP request passed to eval or exec)"
    strings:
        $py1 = /exec\s*\(\s*(urllib\.request\.|urllib2\.|request\.)?urlopen\s*\([^\n]{1,300}\)\s*\.read\s*\(\s*\)/
        $py2 = /exec\s*\(\s*requests\.get\s*\([^\n]{1,300}\)\s*\.(text|content)/
        $py3 = /exec\s*\(\s*(httpx|urllib3)\.[^\n]{1,300}\.(text|content|data)\b/
        $rb1 = /eval\s*\(?\s*(Net::HTTP\.get|URI\.open|open\s*\(\s*['"]https?:|URI\.parse\([^\n]{1,200}\)\.read)/
        $js1 = /(eval|new\s+Function)\s*\(\s*(await\s+)?\(?\s*(await\s+)?(fetch|axios\.get|got|needle)\s*\(\s*['"`]https?:[^\n]{1,300}\)?\s*\)?\.?(text|data|body)?/
        $js2 = /\.on\(\s*['"]end['"]\s*,\s*(function\s*\(\s*\)|\(\s*\)\s*=>)\s*\{?\s*eval\s*\(/
    condition:
        any of them
}

rule threatd_js_download_detached_exec
{
    meta:
        path_include = "*.js,*.cjs,*.mjs,*.ts,*.jsx,*.tsx"
        severity = "high"
        description = "downloads a file and starts it detached from the install, in the background"
    strings:
        $get1 = /\b(https?\.get|https?\.request|fetch|axios|got|needle|request)\s*\(\s*['"`]https?:\/\//
        $get2 = /\b(https?\.get|https?\.request)\s*\(/
        $tmp = /os\.tmpdir\s*\(\s*\)|process\.env\.(TEMP|TMP|APPDATA|LOCALAPPDATA)\b|['"]\/tmp\//
        $chmod = /chmod(Sync)?\s*\([^\n]{1,120}(0o?7[0-7]{2}|['"]7[0-7]{2}['"]|['"]\+x['"])/
        $spawn = /\b(spawn|exec|execFile)\s*\([^\n]{0,300}detached\s*:\s*true/
        $unref = ".unref()"
        $hide = /windowsHide\s*:\s*true/
    condition:
        ($get1 or $get2) and $tmp and $spawn and ($unref or $hide or $chmod)
}

rule threatd_go_shell_backdoor
{
    meta:
        path_include = "*.go"
        severity = "critical"
        description = "Go code that opens a connection and hands it a shell, or fetches and runs code at init"
    strings:
        $dial = /net\.Dial(Timeout)?\s*\(\s*"tcp"/
        $sh = /exec\.Command\s*\(\s*"(\/bin\/)?(ba)?sh"/
        $pipe = /\.Std(in|out|err)\s*=\s*(conn|c)\b/
        $init = /func\s+init\s*\(\s*\)\s*\{/
        $get = /http\.Get\s*\(\s*"https?:\/\//
        $shc = /exec\.Command\s*\(\s*"(\/bin\/)?(ba)?sh"\s*,\s*"-c"/
    condition:
        ($dial and $sh and $pipe) or ($init and $get and $shc)
}

rule threatd_crate_build_dropper
{
    meta:
        path_include = "*.rs"
        severity = "critical"
        description = "a Rust build script that downloads or runs a shell"
    strings:
        $main = /fn\s+main\s*\(\s*\)/
        $cmd = /Command::new\s*\(\s*"(curl|wget|sh|bash|powershell|cmd)(\.exe)?"/
        $url = /"https?:\/\/[^"]{4,}"/
        $http = /(reqwest|ureq|attohttpc)::(blocking::)?get\s*\(/
        $envs = /env::vars\s*\(\s*\)/
    condition:
        $main and (($cmd and $url) or ($http and $envs))
}

rule threatd_ruby_dropper
{
    meta:
        path_include = "*.rb,*.gemspec,*.rake,Rakefile,Gemfile"
        severity = "critical"
        description = "Ruby code that downloads and runs a command, or sends the environment away"
    strings:
        $sys = /(system|exec|spawn|IO\.popen|%x)\s*[\(\[{]?\s*['"][^'"\n]{0,80}\b(curl|wget)\b[^'"\n]{0,200}https?:/
        $tick = /`[^`\n]{0,80}\b(curl|wget)\b[^`\n]{0,200}https?:[^`\n]{0,200}`/
        $env = /ENV\.(to_h|to_a|inspect|each)\b|ENV\.map/
        $post = /Net::HTTP\.(post|post_form)\s*\(|Net::HTTP::Post\.new/
    condition:
        $sys or $tick or ($env and $post)
}

rule threatd_download_chmod_run
{
    meta:
        scope = "install"
        severity = "critical"
        description = "a script that downloads a file, makes it executable and runs it (a dropper at install)"
    strings:
        $get = /\b(curl|wget)\b[^\n]{0,200}\s(-o|-O|--output|--output-document)\s*['"]?[A-Za-z0-9_.\/$~-]+/
        $chmod = /\bchmod\s+(\+x|u\+x|a\+x|7[0-7]{2})\s/
        $run = /(^|\n|;|&&)\s*(\.\/|\/tmp\/|\$TMPDIR\/|\/dev\/shm\/|nohup\s)[A-Za-z0-9_.\/-]+/
    condition:
        $get and $chmod and $run and @chmod[1] > @get[1] and @chmod[1] - @get[1] < 600
}

rule threatd_crate_download_chmod_exec
{
    meta:
        path_include = "*.rs"
        severity = "critical"
        description = "Rust code that downloads a file, makes it executable and runs it"
    strings:
        $http = /(reqwest|ureq|attohttpc|minreq)::(blocking::)?(get|Client)/
        $perm = /(from_mode\s*\(\s*0o?7[0-7]{2}\s*\)|set_permissions)/
        $exec = /Command::new\s*\(/
        $write = /(File::create|fs::write|write_all)\s*\(/
    condition:
        $http and $perm and $exec and $write
}

rule threatd_go_obfuscated_shell
{
    meta:
        path_include = "*.go"
        severity = "critical"
        description = "Go code that runs a shell command it assembles from a scrambled list of characters"
    strings:
        $sh = /exec\.Command\s*\(\s*"(\/bin\/)?(ba)?sh"\s*,\s*"-c"/
        $chars = /(\"[^\"\n]{1,2}\"\s*,\s*){40}/
        $start = /\.Start\s*\(\s*\)/
    condition:
        $sh and $chars and $start
}

rule threatd_exec_shell_pipe
{
    meta:
        severity = "critical"
        description = "runs a shell command that downloads and runs a script, from package code"
    strings:
        $js = /\b(exec|execSync|spawn|spawnSync)\s*\(\s*['"`][^'"`\n]{0,120}\b(curl|wget)\b[^'"`\n]{0,300}(\|\s*(sudo\s+)?(\/bin\/)?(ba|z)?sh\b|chmod\s+\+x)/
        $py = /\b(os\.system|os\.popen|subprocess\.(Popen|call|run|check_call|check_output|getoutput))\s*\(\s*\[?\s*f?['"][^'"\n]{0,120}\b(curl|wget)\b[^'"\n]{0,300}(\|\s*(sudo\s+)?(\/bin\/)?(ba|z)?sh\b|chmod\s+\+x)/
        $go = /exec\.Command\s*\(\s*"(\/bin\/)?(ba)?sh"\s*,\s*"-c"\s*,\s*"[^"\n]{0,120}\b(curl|wget)\b[^"\n]{0,300}(\|\s*(\/bin\/)?(ba)?sh\b|chmod\s+\+x)/
    condition:
        any of them
}

rule threatd_py_download_run
{
    meta:
        severity = "high"
        description = "Python code that downloads a file, writes it and runs it"
        path_include = "*.py,*.pyw,*.pth"
    strings:
        $get = /\b(urllib\.request\.urlretrieve|urlretrieve|requests\.get|urlopen|httpx\.get)\s*\(\s*f?['"]https?:\/\//
        $write = /open\s*\([^\n]{1,200}['"]wb['"]\s*\)|urlretrieve\s*\(/
        $run = /\b(os\.startfile|subprocess\.(Popen|call|run)|os\.system|os\.exec[lv]p?e?)\s*\(/
    condition:
        for any i in (1..#get) : (
            (for any j in (1..#write) : ( @write[j] >= @get[i] and @write[j] - @get[i] < 600 )) and
            (for any j in (1..#run) : ( @run[j] > @get[i] and @run[j] - @get[i] < 1200 ))
        )
}

rule threatd_shell_post_data
{
    meta:
        severity = "high"
        description = "a shell command that posts a file's contents or a command's output to a server"
        scope = "install"
    strings:
        $post = /\b(curl|wget)\b[^\n]{0,200}\s(-d|--data|--data-binary|--data-raw|-F|--form|--post-data|--post-file|--upload-file|-T)\s*['"]?(@|\$\(|`|=@)/
        $pipe = /\b(cat|env|printenv|whoami|hostname|id|uname)\b[^\n|]{0,120}\|\s*(curl|wget)\b[^\n]{0,200}(-d|--data|--data-binary|-F|--post-data|-T)\s*['"]?@-/
    condition:
        any of them
}
