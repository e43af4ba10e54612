module ide-cloud.local/admission

go 1.24
