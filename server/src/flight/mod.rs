//! Arrow Flight SQL on a port of its own (`flight_bind`): the tables, guardrails and access
//! control of `/v1/sql`, for clients that speak Flight SQL (the ADBC and JDBC drivers,
//! pyarrow.flight, DBeaver) and take the answer as Arrow record batches over gRPC.
//!
//! The server is arrow-rs's own (`arrow_flight::sql::server::FlightSqlService`) on tonic.
//! A statement, plain or prepared, is planned when the client asks for its `FlightInfo`
//! (its columns, or a 400's `INVALID_ARGUMENT` for a statement that would not run); the
//! ticket carries the statement and the version it was planned on (`handle`), and
//! `DoGet` runs it there within the same slots and limits as `/v1/sql`
//! ([`crate::api::sql::begin`]). Failures are the problems `/v1/sql` would answer, told by
//! their gRPC codes: `INVALID_ARGUMENT` 400, `UNAUTHENTICATED` 401, `PERMISSION_DENIED` 403,
//! `NOT_FOUND` 404 and 410, `RESOURCE_EXHAUSTED` 413, 422 and 429, `UNAVAILABLE` 503,
//! `DEADLINE_EXCEEDED` 504. A guardrail tripped after the first batch ends the stream with
//! its code, as `/v1/sql` cuts its body. Updates, ingestion, transactions and Substrait
//! plans are refused as `UNIMPLEMENTED` (arrow-rs's defaults): the archive is read-only.
//!
//! The metadata `as-of` (what `asOf` takes on HTTP) runs a statement on an earlier
//! version; each `FlightInfo` names the version in its `app_metadata`.

mod catalog;
mod handle;
mod session;

use crate::api::sql::{Begun, begin, columns, failure};
use crate::http::error::ApiError;
use crate::render::stream::StreamWatch;
use crate::state::AppState;
use crate::versions::{AsOf, Version};
use arrow_flight::encode::{DictionaryHandling, FlightDataEncoderBuilder};
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::sql::metadata::SqlInfoData;
use arrow_flight::sql::server::FlightSqlService;
use arrow_flight::sql::{
    ActionClosePreparedStatementRequest, ActionCreatePreparedStatementRequest,
    ActionCreatePreparedStatementResult, Any, CommandGetCatalogs, CommandGetDbSchemas,
    CommandGetSqlInfo, CommandGetTableTypes, CommandGetTables, CommandPreparedStatementQuery,
    CommandStatementQuery, ProstMessageExt, SqlInfo, TicketStatementQuery,
};
use arrow_flight::{
    Action, FlightDescriptor, FlightEndpoint, FlightInfo, HandshakeRequest, HandshakeResponse,
    IpcMessage, SchemaAsIpc, Ticket,
};
use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::ipc::writer::IpcWriteOptions;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt, TryStreamExt};
use handle::Handle;
use http::HeaderMap;
use prost::Message;
use session::Sessions;
use std::pin::Pin;
use std::sync::Arc;
use tonic::metadata::MetadataValue;
use tonic::{Code, Request, Response, Status, Streaming};

/// The metadata key that names the version to answer from, as `asOf` does on HTTP.
const AS_OF: &str = "as-of";

/// What the log calls this door's calls (an HTTP problem names its path).
const INSTANCE: &str = "flight-sql";

type Answer = Pin<Box<dyn Stream<Item = Result<arrow_flight::FlightData, Status>> + Send>>;

/// Serves Flight SQL on `listener` until `shutdown`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    service: FlightSql,
    shutdown: impl Future<Output = ()>,
) -> Result<(), tonic::transport::Error> {
    // No Nagle: a small reply (a `FlightInfo`) otherwise waited for the client's delayed
    // ACK, 40 ms a call (measured with pyarrow.flight: `GetFlightInfo` 45 ms, 5 ms without).
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    tonic::transport::Server::builder()
        .add_service(FlightServiceServer::new(service))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
}

pub struct FlightSql {
    state: Arc<AppState>,
    sessions: Sessions,
    info: SqlInfoData,
}

impl FlightSql {
    /// The service, or why it cannot be: Flight SQL answers SQL, which the basic variant and
    /// `sql = false` turn off.
    pub fn new(state: Arc<AppState>) -> Result<Self, String> {
        if !state.config.sql || state.basic() {
            return Err(
                "flight_bind serves SQL: it needs sql = true and the extended variant".into(),
            );
        }
        let info = catalog::sql_info(&state.config).map_err(|e| e.to_string())?;
        Ok(Self {
            state,
            sessions: Sessions::new(),
            info,
        })
    }

    /// Lets the call through if its credentials are good.
    fn admit<T>(&self, request: &Request<T>) -> Result<(), Status> {
        self.sessions
            .admit(&self.state.gate, &headers(request))
            .map_err(status)
    }

    /// The version a new statement runs on: the one `as-of` names, else the current one.
    async fn version_asked<T>(&self, request: &Request<T>) -> Result<Arc<Version>, Status> {
        let current = self.state.version();
        let Some(value) = request.metadata().get(AS_OF) else {
            return Ok(current);
        };
        let text = value
            .to_str()
            .map_err(|_| Status::invalid_argument("as-of: not text"))?;
        let as_of = AsOf::parse(text).map_err(status)?;
        self.state
            .versions
            .resolve(&current, &as_of)
            .await
            .map_err(status)
    }

    /// The version a handle was planned on.
    async fn version_of(&self, handle: &Handle) -> Result<Arc<Version>, Status> {
        let as_of = AsOf::parse(&handle.version).map_err(status)?;
        self.state
            .versions
            .resolve(&self.state.version(), &as_of)
            .await
            .map_err(status)
    }

    /// Plans `statement` on the version asked for: its handle and columns.
    async fn planned<T>(
        &self,
        statement: String,
        request: &Request<T>,
    ) -> Result<(Handle, Schema), Status> {
        self.admit(request)?;
        let version = self.version_asked(request).await?;
        let schema = columns(&self.state, &version, &statement)
            .await
            .map_err(status)?;
        let handle = Handle {
            version: version.dataset.manifest.version.clone(),
            statement,
        };
        Ok((handle, schema.as_ref().clone()))
    }

    /// Runs the statement of `handle` and streams its rows.
    async fn answer(&self, handle: &[u8]) -> Result<Response<Answer>, Status> {
        let handle = Handle::decode(handle).map_err(status)?;
        let version = self.version_of(&handle).await?;
        let Begun {
            schema,
            rows,
            permit,
        } = begin(&self.state, &version, &handle.statement)
            .await
            .map_err(status)?;
        let state = Arc::clone(&self.state);
        let batches = rows.map(move |item| {
            // The slot is held as long as the stream is.
            let _slot = &permit;
            match item {
                Ok(batch) => {
                    state.rows_sent(batch.num_rows());
                    Ok(batch)
                }
                Err(e) => {
                    state.cut(&e.to_string());
                    Err(FlightError::Tonic(Box::new(status(failure(&state, e)))))
                }
            }
        });
        let gathered = gathered(Arc::clone(&schema), batches.boxed());
        Ok(Response::new(encoded(schema, gathered.boxed())))
    }
}

/// The size an answer's batches are joined up to before they are sent (the encoder splits
/// messages above 2 MiB).
const MESSAGE_BYTES: usize = 1024 * 1024;

/// `batches` joined into batches of about [`MESSAGE_BYTES`]: a series read a month at a time
/// comes as batches of ~3 000 rows, and each message costs a client (the ADBC driver's Go
/// gRPC and protobuf above all) as much as thousands of rows. Measured with the driver
/// (`benches/sql.py`'s 10-year series, 120 months): 37 ms a message a month, 32 ms joined to
/// 256 KiB, 24 ms to 1 MiB, 28 ms to 2 or 4 MiB. The cost: a message waits until 1 MiB of
/// rows is made (or the rows end), and the join copies the rows once.
fn gathered(
    schema: SchemaRef,
    batches: BoxStream<'static, Result<RecordBatch, FlightError>>,
) -> impl Stream<Item = Result<RecordBatch, FlightError>> {
    futures::stream::try_unfold(Some(batches), move |batches| {
        let schema = Arc::clone(&schema);
        async move {
            let Some(mut batches) = batches else {
                return Ok(None);
            };
            let mut held = Vec::new();
            let mut bytes = 0;
            while bytes < MESSAGE_BYTES {
                match batches.try_next().await? {
                    Some(batch) => {
                        bytes += batch.get_array_memory_size();
                        held.push(batch);
                    }
                    None if held.is_empty() => return Ok(None),
                    None => {
                        let batch = concat_batches(&schema, &held)?;
                        return Ok(Some((batch, None)));
                    }
                }
            }
            let batch = concat_batches(&schema, &held)?;
            Ok(Some((batch, Some(batches))))
        }
    })
}

/// The call's metadata as HTTP headers, as the access gate reads them.
fn headers<T>(request: &Request<T>) -> HeaderMap {
    request.metadata().clone().into_headers()
}

/// `e` as a gRPC status: the problem `/v1/sql` would answer, by its code.
fn status(e: ApiError) -> Status {
    let (http, detail) = e.told(INSTANCE);
    let code = match http.as_u16() {
        400 | 405 | 406 | 414 | 415 | 431 => Code::InvalidArgument,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 | 410 => Code::NotFound,
        413 | 422 | 429 => Code::ResourceExhausted,
        503 => Code::Unavailable,
        504 => Code::DeadlineExceeded,
        _ => Code::Internal,
    };
    Status::new(code, detail)
}

fn internal(e: impl std::fmt::Display) -> Status {
    status(ApiError::Internal(e.to_string()))
}

fn encoded(
    schema: SchemaRef,
    batches: BoxStream<'static, Result<RecordBatch, FlightError>>,
) -> Answer {
    // Dictionaries sent as they are (whole with each batch), so that the rows come in the
    // types the `FlightInfo` named; the default would turn them into plain columns.
    FlightDataEncoderBuilder::new()
        .with_dictionary_handling(DictionaryHandling::Resend)
        .with_schema(schema)
        .build(batches)
        .map_err(Status::from)
        .boxed()
}

/// One batch made now, as an answer.
fn one_batch(batch: Result<RecordBatch, FlightError>) -> Result<Response<Answer>, Status> {
    let batch = batch.map_err(internal)?;
    let schema = batch.schema();
    Ok(Response::new(encoded(
        schema,
        futures::stream::once(async { Ok(batch) }).boxed(),
    )))
}

/// A `FlightInfo` whose one endpoint's ticket is `ticket`, on this server.
fn info_for(
    schema: &Schema,
    ticket: Bytes,
    descriptor: FlightDescriptor,
    version: Option<&str>,
) -> Result<Response<FlightInfo>, Status> {
    let endpoint = FlightEndpoint::new().with_ticket(Ticket { ticket });
    let mut info = FlightInfo::new()
        .try_with_schema(schema)
        .map_err(internal)?
        .with_endpoint(endpoint)
        .with_descriptor(descriptor)
        .with_ordered(true);
    if let Some(version) = version {
        info = info.with_app_metadata(Bytes::from(version.to_owned()));
    }
    Ok(Response::new(info))
}

/// A metadata command's `FlightInfo`: the command itself is the ticket.
fn metadata_info(
    schema: &Schema,
    command: impl ProstMessageExt,
    request: Request<FlightDescriptor>,
) -> Result<Response<FlightInfo>, Status> {
    let ticket = Bytes::from(command.as_any().encode_to_vec());
    info_for(schema, ticket, request.into_inner(), None)
}

#[tonic::async_trait]
impl FlightSqlService for FlightSql {
    type FlightService = FlightSql;

    async fn do_handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<
        Response<Pin<Box<dyn Stream<Item = Result<HandshakeResponse, Status>> + Send>>>,
        Status,
    > {
        self.admit(&request)?;
        let token = self.sessions.token().map_err(status)?;
        let bearer = MetadataValue::try_from(format!("Bearer {token}")).map_err(internal)?;
        let reply = HandshakeResponse {
            protocol_version: 0,
            payload: Bytes::from(token),
        };
        let mut response: Response<Pin<Box<dyn Stream<Item = _> + Send>>> =
            Response::new(futures::stream::once(async { Ok(reply) }).boxed());
        response.metadata_mut().insert("authorization", bearer);
        Ok(response)
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let (handle, schema) = self.planned(query.query, &request).await?;
        let ticket = TicketStatementQuery {
            statement_handle: handle.encode(),
        };
        let ticket = Bytes::from(ticket.as_any().encode_to_vec());
        info_for(&schema, ticket, request.into_inner(), Some(&handle.version))
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<Answer>, Status> {
        self.admit(&request)?;
        self.answer(&ticket.statement_handle).await
    }

    async fn do_action_create_prepared_statement(
        &self,
        query: ActionCreatePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<ActionCreatePreparedStatementResult, Status> {
        let (handle, schema) = self.planned(query.query, &request).await?;
        let IpcMessage(dataset_schema) = SchemaAsIpc::new(&schema, &IpcWriteOptions::default())
            .try_into()
            .map_err(internal)?;
        Ok(ActionCreatePreparedStatementResult {
            prepared_statement_handle: handle.encode(),
            dataset_schema,
            parameter_schema: Bytes::new(),
        })
    }

    async fn do_action_close_prepared_statement(
        &self,
        _query: ActionClosePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<(), Status> {
        // Nothing is kept for a prepared statement: its handle is all of it.
        self.admit(&request)
    }

    async fn get_flight_info_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.admit(&request)?;
        let handle = Handle::decode(&query.prepared_statement_handle).map_err(status)?;
        let version = self.version_of(&handle).await?;
        let schema = columns(&self.state, &version, &handle.statement)
            .await
            .map_err(status)?;
        let ticket = Bytes::from(query.as_any().encode_to_vec());
        info_for(&schema, ticket, request.into_inner(), Some(&handle.version))
    }

    async fn do_get_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<Answer>, Status> {
        self.admit(&request)?;
        self.answer(&query.prepared_statement_handle).await
    }

    async fn get_flight_info_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.admit(&request)?;
        let schema = query.clone().into_builder(&self.info).schema();
        metadata_info(&schema, query, request)
    }

    async fn do_get_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<Ticket>,
    ) -> Result<Response<Answer>, Status> {
        self.admit(&request)?;
        one_batch(query.into_builder(&self.info).build())
    }

    async fn get_flight_info_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.admit(&request)?;
        let schema = query.into_builder().schema();
        metadata_info(&schema, query, request)
    }

    async fn do_get_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<Ticket>,
    ) -> Result<Response<Answer>, Status> {
        self.admit(&request)?;
        one_batch(catalog::catalogs(query))
    }

    async fn get_flight_info_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.admit(&request)?;
        let schema = query.clone().into_builder().schema();
        metadata_info(&schema, query, request)
    }

    async fn do_get_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<Ticket>,
    ) -> Result<Response<Answer>, Status> {
        self.admit(&request)?;
        one_batch(catalog::schemas(query))
    }

    async fn get_flight_info_tables(
        &self,
        query: CommandGetTables,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.admit(&request)?;
        let schema = query.clone().into_builder().schema();
        metadata_info(&schema, query, request)
    }

    async fn do_get_tables(
        &self,
        query: CommandGetTables,
        request: Request<Ticket>,
    ) -> Result<Response<Answer>, Status> {
        self.admit(&request)?;
        let version = self.version_asked(&request).await?;
        let tables = version
            .sql_tables()
            .map_err(|e| status(failure(&self.state, e)))?;
        one_batch(catalog::tables(query, &tables))
    }

    async fn get_flight_info_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.admit(&request)?;
        let schema = query.into_builder().schema();
        metadata_info(&schema, query, request)
    }

    async fn do_get_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<Ticket>,
    ) -> Result<Response<Answer>, Status> {
        self.admit(&request)?;
        one_batch(catalog::table_types(query))
    }

    async fn do_get_fallback(
        &self,
        request: Request<Ticket>,
        message: Any,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.admit(&request)?;
        Err(Status::unimplemented(format!(
            "this server answers no ticket of type {}",
            message.type_url
        )))
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, Int64Array};
    use datafusion::arrow::datatypes::{DataType, Field};

    /// Month-sized batches come out joined to about a MiB each, every row once, in order.
    #[tokio::test]
    async fn small_batches_are_joined_in_order() {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        let months: Vec<Result<RecordBatch, FlightError>> = (0..300i64)
            .map(|m| {
                let rows = Int64Array::from_iter_values(m * 3_000..(m + 1) * 3_000);
                Ok(RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(rows)]).unwrap())
            })
            .collect();
        let joined: Vec<RecordBatch> =
            gathered(Arc::clone(&schema), futures::stream::iter(months).boxed())
                .try_collect()
                .await
                .unwrap();
        // 300 x 24 KB: 7 MB in batches of ~1 MiB.
        assert!((6..=9).contains(&joined.len()), "{} batches", joined.len());
        let mut next = 0;
        for batch in &joined {
            let n = batch
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            for v in n.values() {
                assert_eq!(*v, next);
                next += 1;
            }
        }
        assert_eq!(next, 900_000);
        let none = gathered(schema, futures::stream::empty().boxed());
        assert_eq!(none.count().await, 0);
    }
}
