//! Text columns of one value as encoded column chunks, to put beside stored chunks in a
//! Parquet answer ([`super::assembly::Assembly::copy_joined`]): a many-series answer's
//! `stationId` and `parameterId` are one value for a whole stored month.
//!
//! The chunks are written by the parquet crate's Arrow writer (a dictionary of one value and
//! pages of keys that are all zero, a few dozen bytes), once per row count a series' months
//! have (a handful: the month's length in days), and copied for every month of that length.

use crate::error::Result;
use crate::parquet::assembly::{Chunks, FileFooter};
use bytes::Bytes;
use datafusion::arrow::array::{ArrayRef, DictionaryArray, Int32Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{Int32Type, SchemaRef};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_writer::ArrowWriterOptions;
use datafusion::parquet::file::properties::WriterProperties;
use std::sync::{Arc, Mutex, PoisonError};

/// Row counts whose chunks are kept, at most; a series has months of a few lengths.
const KEPT: usize = 16;

/// Columns of a dictionary-encoded text type, each of one value, as chunks of any length.
pub struct ConstantColumns {
    /// The columns' fields.
    schema: SchemaRef,
    texts: Vec<String>,
    /// The stored columns' writer settings, so that the answer's row groups look alike.
    properties: WriterProperties,
    made: Mutex<Vec<Arc<Encoded>>>,
}

/// The columns for one row count: a Parquet file of one row group.
pub struct Encoded {
    rows: usize,
    footer: FileFooter,
    file: Bytes,
    columns: Vec<usize>,
}

impl Encoded {
    /// Its chunks, to join to others with as many rows.
    pub fn chunks(&self) -> Chunks<'_> {
        Chunks {
            footer: &self.footer,
            group: 0,
            columns: &self.columns,
            data: &self.file,
            data_start: 0,
        }
    }
}

impl ConstantColumns {
    /// Columns of the fields of `schema` (dictionaries of Int32 keys and Utf8 values), each
    /// holding the text of the same position in `texts`, written with `properties` (those of
    /// the chunks they are put beside).
    pub fn new(schema: SchemaRef, texts: Vec<String>, properties: WriterProperties) -> Self {
        Self {
            schema,
            texts,
            properties,
            made: Mutex::new(Vec::new()),
        }
    }

    /// The columns' chunks for `rows` rows.
    pub fn encoded(&self, rows: usize) -> Result<Arc<Encoded>> {
        let made = || self.made.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = made().iter().find(|e| e.rows == rows) {
            return Ok(Arc::clone(e));
        }
        let encoded = Arc::new(self.encode(rows)?);
        let mut made = made();
        if made.len() < KEPT {
            made.push(Arc::clone(&encoded));
        }
        Ok(encoded)
    }

    fn encode(&self, rows: usize) -> Result<Encoded> {
        let columns: Vec<ArrayRef> = self
            .texts
            .iter()
            .map(|text| {
                let keys = Int32Array::from(vec![0; rows]);
                let values: ArrayRef = Arc::new(StringArray::from(vec![text.as_str()]));
                Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(keys, values)?) as ArrayRef)
            })
            .collect::<Result<_>>()?;
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)?;
        // One row group whatever the row count.
        let properties = self
            .properties
            .clone()
            .into_builder()
            .set_max_row_group_row_count(Some(rows.max(1)))
            .build();
        let options = ArrowWriterOptions::new()
            .with_properties(properties)
            .with_skip_arrow_metadata(true);
        let mut writer = ArrowWriter::try_new_with_options(Vec::new(), batch.schema(), options)?;
        writer.write(&batch)?;
        let file = Bytes::from(writer.into_inner()?);
        let footer = FileFooter::parse(&file, 0)?;
        Ok(Encoded {
            rows,
            footer,
            file,
            columns: (0..self.texts.len()).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parquet::assembly::Assembly;
    use datafusion::arrow::array::Array;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn text() -> DataType {
        DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
    }

    /// Constant chunks joined to chunks of another file read back as one table, row groups of
    /// different lengths included; a join of different lengths is refused.
    #[test]
    fn joined_to_other_chunks_they_read_back() {
        let ids = Arc::new(Schema::new(vec![
            Field::new("station", text(), false),
            Field::new("parameter", text(), false),
        ]));
        let constants = ConstantColumns::new(
            Arc::clone(&ids),
            vec!["s-1".into(), "p".into()],
            WriterProperties::default(),
        );
        let values_schema = Arc::new(Schema::new(vec![Field::new(
            "value",
            DataType::Int32,
            false,
        )]));
        let values = |n: i32| {
            let batch = RecordBatch::try_new(
                Arc::clone(&values_schema),
                vec![Arc::new(Int32Array::from_iter_values(0..n)) as ArrayRef],
            )
            .unwrap();
            let mut w = ArrowWriter::try_new(Vec::new(), batch.schema(), None).unwrap();
            w.write(&batch).unwrap();
            let file = Bytes::from(w.into_inner().unwrap());
            (FileFooter::parse(&file, 0).unwrap(), file)
        };
        let mut fields = ids.fields().to_vec();
        fields.extend(values_schema.fields().iter().cloned());
        let all = Arc::new(Schema::new(fields));
        let empty = ArrowWriter::try_new(Vec::new(), Arc::clone(&all), None)
            .unwrap()
            .into_inner()
            .unwrap();
        let (mut out, head) = Assembly::new(&empty).unwrap();
        let mut bytes = head.to_vec();
        // Ids for `ids` rows joined to a stored chunk of `rows` rows.
        let mut join = |ids: usize, rows: i32| {
            let (footer, file) = values(rows);
            let enc = constants.encoded(ids).unwrap();
            let stored = Chunks {
                footer: &footer,
                group: 0,
                columns: &[0],
                data: &file,
                data_start: 0,
            };
            out.copy_joined(&[enc.chunks(), stored])
        };
        for n in [2_976, 2_880, 2_976] {
            for f in join(n as usize, n).unwrap() {
                bytes.extend_from_slice(&f);
            }
        }
        assert!(join(11, 10).is_err());
        assert_eq!(constants.made.lock().unwrap().len(), 3);
        bytes.extend_from_slice(&out.finish().unwrap());

        let reader = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(bytes))
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, 2_976 * 2 + 2_880);
        for b in &batches {
            let station = b
                .column(0)
                .as_any()
                .downcast_ref::<DictionaryArray<Int32Type>>();
            let station = station.unwrap().downcast_dict::<StringArray>().unwrap();
            assert!(station.into_iter().all(|s| s == Some("s-1")));
            assert_eq!(b.column(2).null_count(), 0);
        }
    }
}
