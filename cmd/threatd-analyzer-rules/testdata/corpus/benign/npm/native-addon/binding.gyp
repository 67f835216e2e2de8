{"targets":[{"target_name":"addon","sources":["src/addon.cc"]}]}
