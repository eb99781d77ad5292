"""The data service's tool rows and record models, beside `portal_tools`."""
