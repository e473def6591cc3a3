module github.com/openmax/openmax

go 1.26.8
