"""Package data: the published validation rules and the SchXslt compiler (see README.md here)."""
