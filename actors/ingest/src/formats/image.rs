//! Images: not yet extracted (OCR lands next).

use crate::engines::Engines;
use crate::error::IngestError;
use crate::extracted::Extracted;
use crate::kind::Kind;
use crate::limits::Limits;

pub(crate) fn extract(
    kind: Kind,
    _bytes: &[u8],
    _limits: &Limits,
    _engines: &Engines,
) -> Result<Extracted, IngestError> {
    Err(IngestError::NeedsWorker { kind })
}
