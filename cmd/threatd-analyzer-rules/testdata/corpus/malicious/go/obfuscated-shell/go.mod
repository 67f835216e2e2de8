module github.com/example/hypert

go 1.21
