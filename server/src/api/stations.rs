//! `GET /v1/stations` and `GET /v1/stations/{id}`.

use crate::api::Ctx;
use crate::api::query_parameters::SEARCH;
use crate::api::request::{Paging, StationRequest, StationsRequest};
use crate::api::swapped::{Alternate, swapped_coordinates};
use crate::http::error::ApiError;
use crate::render::encode::Given;
use crate::render::encode::catalog::{Data, Document, ListEncoder, csv_columns};
use crate::render::encode::table;
use crate::render::envelope::Pagination;
use crate::render::format::{Answer, Encoder, Format};
use crate::render::html::pages;
use crate::render::reply::{Reply, attachment, built};
use crate::render::resources::SortSpec;
use crate::render::resources::{Includes, STATION_CSV, STATION_TABLE_MORE, project};
use crate::render::station_list;
use http::{HeaderMap, header};
use hydro_engine::Station;
use hydro_engine::StationFilter;
use serde_json::Value;
use std::sync::Arc;

/// The columns of a station answer without `fields`: the standard's CSV columns, or every
/// plain field in a table (with the lists `include` adds), and `distance` when `near` gave it.
/// `None` with `fields`: the columns the named fields have.
fn station_columns(
    fields: &Option<Vec<String>>,
    format: Format,
    include: Includes,
    near: bool,
) -> Option<Vec<String>> {
    if fields.is_some() {
        return None;
    }
    let table = format.is_table();
    let more = if table { STATION_TABLE_MORE } else { &[] };
    let mut cols: Vec<String> = STATION_CSV
        .iter()
        .chain(more)
        .map(|s| s.to_string())
        .collect();
    if near {
        cols.push("distance".into());
    }
    if table {
        let lists = [
            (include.parameters, "parameters"),
            (include.characteristics, "characteristics"),
        ];
        cols.extend(lists.iter().filter(|l| l.0).map(|l| l.1.to_owned()));
    }
    Some(cols)
}

pub fn stations(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let StationsRequest {
        filter,
        include,
        sort,
        fields,
        paging: Paging {
            limit,
            offset,
            given: paging,
        },
        format,
    } = ctx.request()?;
    if format == Format::HTML {
        return Ok(station_page(ctx, &filter, &sort, (limit, offset)));
    }

    // The page's positions in the list. Unsorted, only the page's matches are collected;
    // sorted, every match is, and only the page's are ordered.
    let first = usize::try_from(offset).unwrap_or(usize::MAX);
    let page_range = first..limit.map_or(usize::MAX, |l| {
        first.saturating_add(usize::try_from(l).unwrap_or(usize::MAX))
    });
    let (find_keep, order_keep) = if sort.is_empty() {
        (page_range, 0..usize::MAX)
    } else {
        (0..usize::MAX, page_range)
    };
    let (total, hits) = ctx
        .version
        .dataset
        .catalog
        .find_stations(&filter, find_keep);
    let page = Pagination::new(total as u64, limit, offset);
    // Streaming a long list, or sorting one, costs as much as a value download.
    let heavy = total > station_list::PER_FRAME
        && (!sort.is_empty() || page.count > station_list::PER_FRAME as u64);
    let permit = heavy.then(|| ctx.heavy_permit()).transpose()?;
    let chosen = station_list::order(&hits, &sort, order_keep);
    let items = station_list::Items {
        zone: ctx.state.zone,
        dataset: Arc::clone(&ctx.version.dataset),
        include,
        fields,
    };
    let page = paging.then_some(page);
    let swapped = swapped_coordinates(ctx, &filter);
    let mut listed = vec![
        ("self", ctx.paging_url().this()),
        ("station", ctx.url("/stations/{stationId}")),
    ];
    listed.extend(swapped.as_ref().map(|a| ("alternate", a.href.clone())));
    let links = ctx.links(listed, page.as_ref());
    let columns = match station_columns(&items.fields, format, include, filter.near.is_some()) {
        Some(c) => c,
        // Named fields: the columns the page's items have, known before its first row.
        None if format.names_columns() => csv_columns(chosen.iter().map(|&c| items.item(c))),
        // Tables take the columns of their items once they are made.
        None => Vec::new(),
    };
    let mut headers = ctx.paging_headers(page.as_ref());
    attachment(&mut headers, format, "stations");
    if let Some(v) = swapped.as_ref().and_then(Alternate::header) {
        headers.append(header::LINK, v);
    }
    let text = match format.encoder() {
        Encoder::Text(text) => text,
        Encoder::Table(table) => {
            let values: Vec<Value> = chosen.iter().map(|&c| items.item(c)).collect();
            let refs: Vec<&Value> = values.iter().collect();
            let columns = if columns.is_empty() {
                csv_columns(values.iter())
            } else {
                columns
            };
            let bytes = table::encode(&refs, &columns, table)?;
            return Ok(built(bytes, format, headers));
        }
        Encoder::Chart(_) | Encoder::Page => {
            return Err(ApiError::Internal(format!(
                "stations as {}",
                format.short()
            )));
        }
    };
    let meta = ctx.meta("stations", page.as_ref());
    let envelope = Given {
        meta: &meta,
        links: links.as_ref(),
    };
    let list = ListEncoder::new(text, &envelope, "station", columns);
    if chosen.len() <= station_list::PER_FRAME {
        let bytes = station_list::built(&list, &items, &chosen);
        return Ok(built(bytes, format, headers));
    }
    Ok(Reply {
        status: http::StatusCode::OK,
        body: station_list::streamed(list, items, chosen, permit),
        len: None,
        content_type: format.content_type(),
        headers,
        cacheable: true,
        compressible: true,
        storable: false,
    })
}

/// The station list as a page for people: a page of the stations the filters select (200 when
/// no `limit` is given), in the order asked for.
fn station_page(
    ctx: &Ctx<'_>,
    filter: &StationFilter,
    sort: &[SortSpec],
    (limit, offset): (Option<u64>, u64),
) -> Reply {
    let limit = limit.unwrap_or(pages::PAGE_ROWS);
    let first = usize::try_from(offset).unwrap_or(usize::MAX);
    let keep = first..first.saturating_add(usize::try_from(limit).unwrap_or(usize::MAX));
    let catalog = &ctx.version.dataset.catalog;
    let (total, hits) = if sort.is_empty() {
        let (total, hits) = catalog.find_stations(filter, keep);
        let hits = hits.iter().map(|h| (h.station, h.distance_km)).collect();
        (total, hits)
    } else {
        let (total, hits) = catalog.find_stations(filter, 0..usize::MAX);
        let stations = catalog.stations();
        let hits: Vec<(&Station, Option<f64>)> = station_list::order(&hits, sort, keep)
            .iter()
            .filter_map(|c| Some((stations.get(c.index)?, c.distance_km)))
            .collect();
        (total, hits)
    };
    let search = ctx.query.get(SEARCH.name).ok().flatten().unwrap_or("");
    let swapped = swapped_coordinates(ctx, filter);
    pages::station_list(
        &ctx.site(),
        (total, hits),
        sort,
        (limit, offset),
        search,
        &Format::offered(Answer::Stations),
        swapped.as_ref().map(|a| (a.href.as_str(), a.title)),
    )
}

pub fn station(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    ctx.admit::<StationRequest>()?;
    let s = ctx.station(id)?;
    let StationRequest {
        include,
        fields,
        format,
    } = ctx.parse::<StationRequest>()?;
    if format == Format::HTML {
        let offered = Format::offered(Answer::Stations);
        let catalog = &ctx.version.dataset.catalog;
        return Ok(pages::station(&ctx.site(), catalog, s, &offered));
    }
    let mut item = station_list::station_item(
        ctx.state.zone,
        &ctx.version.dataset.catalog,
        s,
        None,
        include,
    );
    if let Some(f) = &fields {
        item = project(&item, f);
    }
    let base = format!("/stations/{}", s.id);
    let links = ctx.links(
        vec![
            ("self", ctx.paging_url().this()),
            ("parameters", ctx.url(&format!("{base}/parameters"))),
            (
                "characteristics",
                ctx.url(&format!("{base}/characteristics")),
            ),
            (
                "values",
                ctx.url(&format!("{base}/parameters/{{parameterId}}/values")),
            ),
        ],
        None,
    );
    let doc = Document {
        meta: ctx.meta("station", None),
        links,
        data: Data::One(&item),
        item_name: "station",
        csv_columns: station_columns(&fields, format, include, false),
    };
    let mut headers = HeaderMap::new();
    attachment(&mut headers, format, &format!("station-{}", s.id));
    Ok(built(format.document(&doc)?, format, headers))
}
