//! What a Flight SQL client is told of the server before it queries: the catalog, schema and
//! tables of [`hydro_engine::SqlTables`] with their columns, the one table type, and the
//! server's `SqlInfo` (read-only, no transactions, its statement time limit). Each answer is
//! one small batch made by arrow-flight's own builders, which also apply the client's filter
//! patterns.

use crate::config::Config;
use arrow_flight::error::FlightError;
use arrow_flight::sql::metadata::{SqlInfoData, SqlInfoDataBuilder};
use arrow_flight::sql::{
    CommandGetCatalogs, CommandGetDbSchemas, CommandGetTableTypes, CommandGetTables, SqlInfo,
    SqlSupportedTransaction,
};
use datafusion::arrow::array::RecordBatch;
use hydro_engine::{SQL_CATALOG, SQL_SCHEMA, SqlTables};

/// The one kind of table there is.
const TABLE_TYPE: &str = "TABLE";

pub fn sql_info(config: &Config) -> Result<SqlInfoData, FlightError> {
    let mut info = SqlInfoDataBuilder::new();
    info.append(SqlInfo::FlightSqlServerName, "Hydro API");
    info.append(SqlInfo::FlightSqlServerVersion, env!("CARGO_PKG_VERSION"));
    info.append(SqlInfo::FlightSqlServerReadOnly, true);
    info.append(SqlInfo::FlightSqlServerSql, true);
    info.append(SqlInfo::FlightSqlServerSubstrait, false);
    info.append(
        SqlInfo::FlightSqlServerTransaction,
        SqlSupportedTransaction::None as i32,
    );
    info.append(SqlInfo::FlightSqlServerCancel, false);
    info.append(
        SqlInfo::FlightSqlServerStatementTimeout,
        i32::try_from(config.sql_timeout_secs).unwrap_or(i32::MAX),
    );
    info.append(SqlInfo::SqlIdentifierQuoteChar, "\"");
    info.build()
}

pub fn catalogs(query: CommandGetCatalogs) -> Result<RecordBatch, FlightError> {
    let mut builder = query.into_builder();
    builder.append(SQL_CATALOG);
    builder.build()
}

pub fn schemas(query: CommandGetDbSchemas) -> Result<RecordBatch, FlightError> {
    let mut builder = query.into_builder();
    builder.append(SQL_CATALOG, SQL_SCHEMA);
    builder.build()
}

pub fn tables(query: CommandGetTables, tables: &SqlTables) -> Result<RecordBatch, FlightError> {
    let mut builder = query.into_builder();
    for (name, schema) in tables.tables() {
        builder.append(SQL_CATALOG, SQL_SCHEMA, name, TABLE_TYPE, &schema)?;
    }
    builder.build()
}

pub fn table_types(query: CommandGetTableTypes) -> Result<RecordBatch, FlightError> {
    let mut builder = query.into_builder();
    builder.append(TABLE_TYPE);
    builder.build()
}
