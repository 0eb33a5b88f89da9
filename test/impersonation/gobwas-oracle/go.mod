module impersync.local/gobwas-oracle

go 1.24

require github.com/gobwas/glob v0.2.3 // indirect
