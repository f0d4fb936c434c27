module hilock/examples/go

go 1.19

require hilock/bindings/go v0.0.0

replace hilock/bindings/go => ../../bindings/go
