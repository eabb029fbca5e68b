"""Moved to ``nodecast.report.files`` (issue 14); kept while commands still import it from here."""

from nodecast.report.files import TABLE_SUFFIXES, check_table_path, write_table

__all__ = ["TABLE_SUFFIXES", "check_table_path", "write_table"]
