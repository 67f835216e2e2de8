module example.com/shop

go 1.22

require (
	github.com/acme/util v1.4.0
	github.com/evil/pkg v1.0.1 // indirect
)

require golang.org/x/text v0.14.0

replace github.com/acme/util => ../util
