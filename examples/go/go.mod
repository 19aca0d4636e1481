module wayfind-example

go 1.26.0

require (
	github.com/wayfind-dev/wayfind/gen/go v0.0.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)

// In this repository the client is the checkout next to this example. Outside it, drop this line
// and run `go get github.com/wayfind-dev/wayfind/gen/go@latest`.
replace github.com/wayfind-dev/wayfind/gen/go => ../../gen/go
