module github.com/openmax/openmax

go 1.26.8

require gopkg.in/yaml.v3 v3.0.1

require (
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/sebdah/goldie/v2 v2.8.0
	github.com/sergi/go-diff v1.0.0 // indirect
	pgregory.net/rapid v1.3.0
)
