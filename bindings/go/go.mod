module github.com/hilock/hilock/bindings/go

go 1.19
