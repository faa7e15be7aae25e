"""The studies behind the accuracy reports: runs trained through the Well's harness and evaluated beside the
classical rows (one script a study, its rows and tables in modules beside it)."""
