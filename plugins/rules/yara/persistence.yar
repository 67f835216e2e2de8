// threatd's rules: shells and footholds. Written for threatd from
// published techniques: reverse shells, startup entries, worms that
// republish with the victim's tokens.

rule threatd_reverse_shell
{
    meta:
        severity = "critical"
        description = "a reverse shell: a network connection handed a shell"
    strings:
        $sh1 = /\/bin\/(ba)?sh\s+-i\b/
        $sh2 = /\/dev\/tcp\/[0-9A-Za-z.$\{\}_-]+\/[0-9$\{\}A-Za-z_]+/
        $nc = /\b(nc|ncat|netcat)\s+(-[a-z]*e\s+\/bin\/(ba)?sh|[^\n]{0,100}-e\s+(\/bin\/(ba)?sh|cmd(\.exe)?))/
        $py_dup = /os\.dup2\s*\(\s*[A-Za-z_.]+\.fileno\s*\(\s*\)\s*,\s*[012]\s*\)/
        $py_sh = /(pty\.spawn|subprocess\.(call|Popen|run))\s*\(\s*\[?\s*['"](\/bin\/)?(ba)?sh['"]/
        $js_sock = /new\s+net\.Socket\s*\(|net\.connect\s*\(/
        $js_sh = /spawn\s*\(\s*['"](\/bin\/)?(ba)?sh['"]|spawn\s*\(\s*['"]cmd(\.exe)?['"]/
        $js_pipe = /\.std(out|err)\.pipe\s*\(\s*\w+\s*\)|\.pipe\s*\(\s*\w+\.stdin\s*\)/
    condition:
        $sh1 and $sh2 or $nc or ($py_dup and $py_sh) or ($js_sock and $js_sh and $js_pipe)
}

rule threatd_startup_persistence
{
    meta:
        severity = "high"
        description = "makes itself start again later: a crontab, shell profile, systemd unit, LaunchAgent or Windows Run key written by package code"
    strings:
        $cron = /(crontab\s+-[lr]?\s*[^\n]{0,80}\||\(crontab\s+-l|echo\s+[^\n]{0,200}\|\s*crontab\s+-)/
        $rc = /(appendFileSync|appendFile|open\s*\([^\n]{0,80}['"]a['"])[^\n]{0,120}\.(bashrc|zshrc|profile|bash_profile)\b/
        $rc2 = /\.(bashrc|zshrc|bash_profile)['"][^\n]{0,200}(appendFileSync|appendFile|['"]a['"]\))/
        $systemd = /\/etc\/systemd\/system\/[^\n]{0,200}systemctl\s+enable/
        $launch = /Library\/LaunchAgents\/[^\n]{0,200}(launchctl\s+load|writeFile)/
        $run = /CurrentVersion\\\\?Run\b[^\n]{0,200}(reg(\.exe)?\s+add|New-ItemProperty|Set-ItemProperty|winreg\.SetValue)/ nocase
        $run2 = /(reg(\.exe)?\s+add|SetValueEx)[^\n]{0,200}CurrentVersion\\\\?Run\b/ nocase
        $startup = /Start Menu\\\\?Programs\\\\?Startup/ nocase
    condition:
        any of them
}

rule threatd_npm_worm
{
    meta:
        severity = "critical"
        description = "republishes packages with the victim's npm token: a self-spreading worm"
    strings:
        $publish = /npm\s+publish\b|\/-\/package\/|registry\.npmjs\.org\/-\/(whoami|npm\/v1\/security)|libnpmpublish/
        $whoami = /npm\s+whoami|\/-\/whoami/
        $token = /NPM_TOKEN|_authToken|npm_config__auth/
        $bump = /version[^\n]{0,80}(split\s*\(\s*['"]\.['"]\s*\)|\+\s*1|\+\+)/
        $tar = /tar\s+-?[xczf]{2,4}\s|\.tgz|pack\s*\(|npm\s+pack/
        $gh = /api\.github\.com\/(user\/repos|repos\/[^\n]{0,80}\/actions\/secrets)|secrets\s*:\s*\$\{\{\s*toJSON\(secrets\)/
        $inject1 = /(postinstall|preinstall)['"]?\s*:\s*['"`]node\s/
        $inject2 = /copyFile(Sync)?\s*\(\s*(__filename|process\.argv\[1\])/
        $inject3 = /\.scripts\s*=\s*\{\s*['"]?(postinstall|preinstall)/
        $inject4 = /scripts\s*\.\s*(postinstall|preinstall)\s*=/
    condition:
        $publish and $token and ($whoami or $bump) and ($tar or $gh) and any of ($inject*)
}

rule threatd_github_secrets_dump
{
    meta:
        severity = "critical"
        description = "writes a workflow that dumps the repository's secrets, or pushes them to a new repository"
    strings:
        $dump = /toJSON\s*\(\s*secrets\s*\)/
        $wf = /\.github[\/\\]+workflows/
        $api = /api\.github\.com\/(user\/repos|repos\/)/
    condition:
        $dump and ($wf or $api)
}

rule threatd_python_install_hook_network
{
    meta:
        path_include = "setup.py"
        severity = "high"
        description = "setup.py replaces the install command with code that reaches the network or runs commands"
    strings:
        $cmdclass = /cmdclass\s*=\s*\{[^}]{0,300}['"](install|develop|egg_info|bdist_wheel|build)['"]\s*:/
        $cls = /class\s+\w+\s*\(\s*(install|_install|develop|egg_info|bdist_wheel|build_py)\s*\)\s*:/
        $net = /\b(urllib\.request\.urlopen|urlopen|requests\.(get|post)|socket\.socket|http\.client\.HTTPS?Connection|urllib\.request\.urlretrieve)\s*\(/
        $run = /\b(os\.system|subprocess\.(Popen|call|run|check_output)|os\.popen)\s*\([^\n]{0,200}(curl|wget|powershell|https?:)/
    condition:
        $cmdclass and $cls and ($net or $run)
}

rule threatd_pth_code
{
    meta:
        path_include = "*.pth"
        severity = "high"
        description = "a .pth file line that runs code at every Python start (import …; exec/subprocess/network)"
    strings:
        $imp = /(^|\n)import\s+[a-z_, ]+;[^\n]{0,400}\b(exec|eval)\s*\(/
    condition:
        $imp
}
