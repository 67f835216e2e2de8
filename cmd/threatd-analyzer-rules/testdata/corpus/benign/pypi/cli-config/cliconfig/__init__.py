import os
import configparser
def load():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.expanduser("~/.cliconfig/config"))
    region = os.environ.get("AWS_DEFAULT_REGION", "us-east-1")
    home = os.environ.get("HOME", "")
    return cfg, region, home
