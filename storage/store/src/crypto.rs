//! The secret box: how credentials (bring-your-own API keys, webhook secrets) are
//! encrypted at rest.
//!
//! AES-256-GCM with a fresh random 96-bit nonce per seal. A sealed value is text:
//! `v1:` followed by the standard base64 of `nonce || ciphertext || tag`, so it fits in any
//! JSON record. The 32-byte key lives in a key file (base64, mode 0600) under the data dir,
//! created on first start by [`SecretBox::load_or_create`]; losing it makes every sealed
//! value unreadable, so operators back it up with the data.

use std::fmt;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

/// The prefix of every sealed value; a future format change gets a new one.
const SEALED_PREFIX: &str = "v1:";
const KEY_LEN: usize = 32;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
/// A key file is 44 base64 characters and a newline; anything far larger is not a key.
const KEY_FILE_MAX_BYTES: u64 = 1024;

/// Why a key could not be loaded or a sealed value could not be opened. No variant ever
/// carries key material or plaintext.
#[derive(Debug, thiserror::Error)]
pub enum CryptoError {
    /// The key material is not base64 of exactly 32 bytes.
    #[error("invalid secret key: {0}")]
    InvalidKey(String),
    /// The key file exists but does not hold a valid key.
    #[error("invalid secret key file {path}: {reason}")]
    InvalidKeyFile { path: PathBuf, reason: String },
    /// The key file could not be read or written.
    #[error("secret key file {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The sealed value is not in the sealed format (prefix, base64, length).
    #[error("malformed sealed value: {0}")]
    Malformed(String),
    /// Authentication failed: the value was sealed with another key or was altered.
    #[error("sealed value could not be opened: wrong key or tampered data")]
    Decrypt,
    /// The opened value was expected to be UTF-8 text and is not.
    #[error("sealed value is not UTF-8 text")]
    NotUtf8,
}

/// AES-256-GCM sealing with one service-wide key. Cheap to share behind an `Arc`.
#[derive(Clone)]
pub struct SecretBox {
    cipher: Aes256Gcm,
}

impl fmt::Debug for SecretBox {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("SecretBox { key: <redacted> }")
    }
}

impl SecretBox {
    /// A box from base64 (standard alphabet, padding optional) of exactly 32 bytes.
    pub fn from_key_material(base64_key: &str) -> Result<Self, CryptoError> {
        let key = decode_key(base64_key).map_err(CryptoError::InvalidKey)?;
        Ok(Self::from_key_bytes(&key))
    }

    fn from_key_bytes(key: &[u8; KEY_LEN]) -> Self {
        Self {
            cipher: Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(key)),
        }
    }

    /// A freshly generated random key, for tests and ephemeral setups.
    pub fn generate() -> Self {
        let key = Aes256Gcm::generate_key(OsRng);
        Self {
            cipher: Aes256Gcm::new(&key),
        }
    }

    /// Loads the key file at `path`, or creates it with a new random key (mode 0600,
    /// fsynced, never overwriting an existing file). An existing file that does not hold
    /// base64 of exactly 32 bytes is an error, never silently replaced: replacing it would
    /// make every sealed value unreadable.
    pub fn load_or_create(path: &Path) -> Result<Self, CryptoError> {
        match read_key_file(path) {
            Ok(key) => return Ok(Self::from_key_bytes(&key)),
            Err(CryptoError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
        let key: [u8; KEY_LEN] = Aes256Gcm::generate_key(OsRng).into();
        match create_key_file(path, &key) {
            Ok(()) => {
                tracing::info!(path = %path.display(), "created a new secret key file");
                Ok(Self::from_key_bytes(&key))
            }
            // Someone else created it between our read and our create: use theirs.
            Err(CryptoError::Io { source, .. })
                if source.kind() == io::ErrorKind::AlreadyExists =>
            {
                read_key_file(path).map(|key| Self::from_key_bytes(&key))
            }
            Err(error) => Err(error),
        }
    }

    /// Encrypts `plaintext` under a fresh random nonce: `v1:` + base64(nonce || ciphertext).
    pub fn seal(&self, plaintext: &[u8]) -> String {
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        // AES-GCM only refuses plaintexts beyond 64 GiB, far past anything sealed here.
        let ciphertext = self
            .cipher
            .encrypt(&nonce, plaintext)
            .expect("AES-GCM encryption of an in-memory secret cannot fail");
        let mut sealed = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&ciphertext);
        format!("{SEALED_PREFIX}{}", STANDARD.encode(sealed))
    }

    /// [`seal`](Self::seal) for text.
    pub fn seal_str(&self, plaintext: &str) -> String {
        self.seal(plaintext.as_bytes())
    }

    /// Decrypts a value made by [`seal`](Self::seal) with the same key.
    pub fn open(&self, sealed: &str) -> Result<Vec<u8>, CryptoError> {
        let encoded = sealed.trim().strip_prefix(SEALED_PREFIX).ok_or_else(|| {
            CryptoError::Malformed(format!("missing the {SEALED_PREFIX:?} prefix"))
        })?;
        let bytes = STANDARD
            .decode(encoded)
            .map_err(|_| CryptoError::Malformed("not valid base64".to_owned()))?;
        if bytes.len() < NONCE_LEN + TAG_LEN {
            return Err(CryptoError::Malformed(format!(
                "{} bytes is too short to be sealed data",
                bytes.len()
            )));
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        self.cipher
            .decrypt(Nonce::from_slice(nonce), ciphertext)
            .map_err(|_| CryptoError::Decrypt)
    }

    /// [`open`](Self::open) for values sealed with [`seal_str`](Self::seal_str).
    pub fn open_string(&self, sealed: &str) -> Result<String, CryptoError> {
        String::from_utf8(self.open(sealed)?).map_err(|_| CryptoError::NotUtf8)
    }
}

fn decode_key(base64_key: &str) -> Result<[u8; KEY_LEN], String> {
    let trimmed = base64_key.trim();
    let bytes = STANDARD
        .decode(trimmed)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(trimmed))
        .map_err(|_| "not valid base64".to_owned())?;
    <[u8; KEY_LEN]>::try_from(bytes.as_slice())
        .map_err(|_| format!("expected {KEY_LEN} bytes, got {}", bytes.len()))
}

fn read_key_file(path: &Path) -> Result<[u8; KEY_LEN], CryptoError> {
    let io_error = |source| CryptoError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io_error)?;
    warn_if_readable_by_others(path, &file);
    let mut text = String::new();
    file.take(KEY_FILE_MAX_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|source| match source.kind() {
            io::ErrorKind::InvalidData => CryptoError::InvalidKeyFile {
                path: path.to_path_buf(),
                reason: "not text".to_owned(),
            },
            _ => io_error(source),
        })?;
    if text.len() as u64 > KEY_FILE_MAX_BYTES {
        return Err(CryptoError::InvalidKeyFile {
            path: path.to_path_buf(),
            reason: "too large to be a key".to_owned(),
        });
    }
    decode_key(&text).map_err(|reason| CryptoError::InvalidKeyFile {
        path: path.to_path_buf(),
        reason,
    })
}

#[cfg(unix)]
fn warn_if_readable_by_others(path: &Path, file: &std::fs::File) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(metadata) = file.metadata() {
        let mode = metadata.permissions().mode();
        if mode & 0o077 != 0 {
            tracing::warn!(
                path = %path.display(),
                mode = format!("{:o}", mode & 0o777),
                "the secret key file is accessible to other users; chmod 600 it"
            );
        }
    }
}

#[cfg(not(unix))]
fn warn_if_readable_by_others(_path: &Path, _file: &std::fs::File) {}

/// Writes the key to a private temporary file next to `path`, fsyncs it, then links it
/// into place, so `path` never exists half-written and is never overwritten.
fn create_key_file(path: &Path, key: &[u8; KEY_LEN]) -> Result<(), CryptoError> {
    let io_error = |source| CryptoError::Io {
        path: path.to_path_buf(),
        source,
    };
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent).map_err(io_error)?;
    let file_name = path.file_name().ok_or_else(|| {
        io_error(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a file path",
        ))
    })?;
    let mut suffix = [0u8; 8];
    aes_gcm::aead::rand_core::RngCore::fill_bytes(&mut OsRng, &mut suffix);
    let temporary = parent.join(format!(
        ".{}.tmp-{}",
        file_name.to_string_lossy(),
        suffix
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect::<String>()
    ));

    let written = write_private_file(&temporary, format!("{}\n", STANDARD.encode(key)).as_bytes())
        .and_then(|()| std::fs::hard_link(&temporary, path));
    let _ = std::fs::remove_file(&temporary);
    written.map_err(io_error)?;
    // Make the new directory entry durable too; not every platform can fsync a directory.
    if let Ok(directory) = std::fs::File::open(parent) {
        let _ = directory.sync_all();
    }
    Ok(())
}

fn write_private_file(path: &Path, contents: &[u8]) -> io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(contents)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_and_open_round_trip() {
        let secret_box = SecretBox::generate();
        for plaintext in [
            &b""[..],
            b"sk-test-123",
            &[0u8, 255, 7, 9][..],
            &[b'x'; 5000][..],
        ] {
            let sealed = secret_box.seal(plaintext);
            assert!(sealed.starts_with("v1:"));
            assert_eq!(secret_box.open(&sealed).unwrap(), plaintext);
        }
        let sealed = secret_box.seal_str("héllo");
        assert_eq!(secret_box.open_string(&sealed).unwrap(), "héllo");
    }

    #[test]
    fn every_seal_uses_a_fresh_nonce() {
        let secret_box = SecretBox::generate();
        assert_ne!(secret_box.seal(b"same"), secret_box.seal(b"same"));
    }

    #[test]
    fn tampering_is_detected() {
        let secret_box = SecretBox::generate();
        let sealed = secret_box.seal(b"api key");
        let mut bytes = STANDARD.decode(&sealed[3..]).unwrap();
        for position in [0, NONCE_LEN, bytes.len() - 1] {
            bytes[position] ^= 0x01;
            let tampered = format!("v1:{}", STANDARD.encode(&bytes));
            assert!(matches!(
                secret_box.open(&tampered),
                Err(CryptoError::Decrypt)
            ));
            bytes[position] ^= 0x01;
        }
        let truncated = format!("v1:{}", STANDARD.encode(&bytes[..bytes.len() - 1]));
        assert!(matches!(
            secret_box.open(&truncated),
            Err(CryptoError::Decrypt)
        ));
    }

    #[test]
    fn a_wrong_key_cannot_open() {
        let sealed = SecretBox::generate().seal(b"api key");
        let error = SecretBox::generate().open(&sealed).unwrap_err();
        assert!(matches!(error, CryptoError::Decrypt));
        assert!(error.to_string().contains("wrong key or tampered"));
    }

    #[test]
    fn malformed_values_are_rejected() {
        let secret_box = SecretBox::generate();
        for sealed in ["", "plain", "v1:", "v1:!!!notbase64", "v2:AAAA", "v1:AAAA"] {
            assert!(
                matches!(secret_box.open(sealed), Err(CryptoError::Malformed(_))),
                "{sealed:?}"
            );
        }
    }

    #[test]
    fn key_material_must_be_32_bytes_of_base64() {
        let key = STANDARD.encode([7u8; 32]);
        let first = SecretBox::from_key_material(&key).unwrap();
        let second = SecretBox::from_key_material(&format!("  {key}\n")).unwrap();
        assert_eq!(second.open(&first.seal(b"x")).unwrap(), b"x");
        assert!(SecretBox::from_key_material(key.trim_end_matches('=')).is_ok());
        assert!(matches!(
            SecretBox::from_key_material(&STANDARD.encode([7u8; 16])),
            Err(CryptoError::InvalidKey(_))
        ));
        assert!(matches!(
            SecretBox::from_key_material("not base64 at all!"),
            Err(CryptoError::InvalidKey(_))
        ));
    }

    #[test]
    fn debug_never_shows_the_key() {
        let key = STANDARD.encode([42u8; 32]);
        let secret_box = SecretBox::from_key_material(&key).unwrap();
        let debug = format!("{secret_box:?}");
        assert!(!debug.contains(&key));
        assert!(debug.contains("redacted"));
    }

    #[test]
    fn key_file_is_created_private_and_reloaded() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("keys").join("secret.key");
        let created = SecretBox::load_or_create(&path).unwrap();
        let sealed = created.seal(b"persisted");

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let contents = std::fs::read_to_string(&path).unwrap();
        assert_eq!(STANDARD.decode(contents.trim()).unwrap().len(), 32);
        // No temporary file is left behind.
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );

        let reloaded = SecretBox::load_or_create(&path).unwrap();
        assert_eq!(reloaded.open(&sealed).unwrap(), b"persisted");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), contents);
    }

    #[test]
    fn a_malformed_key_file_is_refused_and_kept() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("secret.key");
        for contents in [
            STANDARD.encode([1u8; 16]),
            "garbage!".to_owned(),
            String::new(),
        ] {
            std::fs::write(&path, &contents).unwrap();
            let error = SecretBox::load_or_create(&path).unwrap_err();
            assert!(
                matches!(error, CryptoError::InvalidKeyFile { .. }),
                "{error}"
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), contents);
        }
        std::fs::write(&path, vec![b'A'; 4096]).unwrap();
        assert!(matches!(
            SecretBox::load_or_create(&path),
            Err(CryptoError::InvalidKeyFile { .. })
        ));
    }
}
