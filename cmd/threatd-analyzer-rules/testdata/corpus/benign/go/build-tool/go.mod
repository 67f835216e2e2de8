module github.com/example/buildtool

go 1.21
