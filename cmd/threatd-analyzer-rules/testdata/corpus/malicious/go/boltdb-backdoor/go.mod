module github.com/example/boltdb-go

go 1.21
