module impersync.test/argocdcache

go 1.22
