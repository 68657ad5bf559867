module github.com/orderflow/orderflow/client

go 1.26

require github.com/google/uuid v1.6.0
