module github.com/hilock/hilock/examples/go

go 1.19

require github.com/hilock/hilock/bindings/go v0.0.0

replace github.com/hilock/hilock/bindings/go => ../../bindings/go
