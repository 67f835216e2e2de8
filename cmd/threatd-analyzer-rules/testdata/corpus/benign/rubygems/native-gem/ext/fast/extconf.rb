require "mkmf"
have_library("z")
create_makefile("fast/fast")
