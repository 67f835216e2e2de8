module github.com/example/gocurl

go 1.21
