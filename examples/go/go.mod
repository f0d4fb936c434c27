module github.com/hilock/hilock/examples/go

go 1.19

require github.com/hilock/hilock v0.0.0

replace github.com/hilock/hilock => ../..
