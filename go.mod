module github.com/hilock/hilock

go 1.19
