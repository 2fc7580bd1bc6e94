module tracecorn.samples/fanout

go 1.19
