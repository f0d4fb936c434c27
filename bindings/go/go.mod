module hilock/bindings/go

go 1.19
