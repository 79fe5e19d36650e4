"""The values a coordinator takes and gives, their validators and its errors."""
