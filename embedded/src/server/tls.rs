//! The server's credentials: a CA kept in the data directory, a serving certificate issued by it
//! on every start (so its names always match the bind address), a random bearer token, and the
//! key service account tokens are signed with.
//!
//! Everything secret is written with mode 0600 and never logged.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

/// Errors creating or reading credentials.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// A file could not be read or written.
    #[error("reading or writing {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// Certificate generation failed.
    #[error("generating certificates: {0}")]
    Certificate(#[from] rcgen::Error),
}

/// The PEM material the server and its clients need.
#[derive(Clone)]
pub struct Credentials {
    /// The CA certificate, for clients' kubeconfig.
    pub ca_pem: String,
    /// The CA's key, which signs the serving certificate and approved client certificates.
    pub ca_key_pem: String,
    /// The serving certificate.
    pub cert_pem: String,
    /// The serving key.
    pub key_pem: String,
    /// The bearer token clients must send.
    pub token: String,
    /// The key service account tokens are signed with (PKCS#8 PEM).
    pub service_account_key_pem: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").finish_non_exhaustive()
    }
}

const CA_CERT: &str = "ca.crt";
const CA_KEY: &str = "ca.key";
const TOKEN: &str = "token";
const SERVICE_ACCOUNT_KEY: &str = "sa.key";

/// Loads the CA, the token and the service account key from `dir/pki` (creating them on first
/// start) and issues a serving
/// certificate for `localhost`, the loopback addresses and `extra_ips`.
pub fn load_or_create(dir: &Path, extra_ips: &[IpAddr]) -> Result<Credentials, CredentialsError> {
    let pki = dir.join("pki");
    std::fs::create_dir_all(&pki)
        .map_err(|source| CredentialsError::Io { path: pki.clone(), source })?;

    let ca_params = ca_params();
    let (ca_key, ca_pem) = match (read(&pki.join(CA_KEY))?, read(&pki.join(CA_CERT))?) {
        (Some(key), Some(cert)) => (KeyPair::from_pem(&key)?, cert),
        _ => {
            let key = KeyPair::generate()?;
            let cert = ca_params.self_signed(&key)?;
            write_secret(&pki.join(CA_KEY), &key.serialize_pem())?;
            write_file(&pki.join(CA_CERT), &cert.pem())?;
            (key, cert.pem())
        }
    };
    let token = match read(&pki.join(TOKEN))? {
        Some(token) if !token.trim().is_empty() => token.trim().to_owned(),
        _ => {
            let token = random_token();
            write_secret(&pki.join(TOKEN), &token)?;
            token
        }
    };
    let service_account_key_pem = match read(&pki.join(SERVICE_ACCOUNT_KEY))? {
        Some(key) => key,
        None => {
            let key = KeyPair::generate()?.serialize_pem();
            write_secret(&pki.join(SERVICE_ACCOUNT_KEY), &key)?;
            key
        }
    };

    let ca_key_pem = ca_key.serialize_pem();
    let issuer = Issuer::new(ca_params, ca_key);
    let server_key = KeyPair::generate()?;
    let server_cert = serving_params(extra_ips)?.signed_by(&server_key, &issuer)?;
    Ok(Credentials {
        ca_pem,
        ca_key_pem,
        cert_pem: server_cert.pem(),
        key_pem: server_key.serialize_pem(),
        token,
        service_account_key_pem,
    })
}

fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, "keelson-ca");
    name.push(DnType::OrganizationName, "Keelson");
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = rcgen::date_time_ymd(2025, 1, 1);
    params.not_after = rcgen::date_time_ymd(2125, 1, 1);
    params
}

fn serving_params(extra_ips: &[IpAddr]) -> Result<CertificateParams, CredentialsError> {
    let mut params = CertificateParams::new(vec!["localhost".to_owned(), "keelson".to_owned()])?;
    let mut ips: Vec<IpAddr> = vec![Ipv4Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()];
    ips.extend(extra_ips.iter().filter(|ip| !ip.is_unspecified()));
    params.subject_alt_names.extend(ips.into_iter().map(SanType::IpAddress));
    params.distinguished_name.push(DnType::CommonName, "keelson-apiserver");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = rcgen::date_time_ymd(2025, 1, 1);
    params.not_after = rcgen::date_time_ymd(2125, 1, 1);
    Ok(params)
}

/// 32 random bytes as hex, from the operating system's generator.
fn random_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random generator is available");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn read(path: &Path) -> Result<Option<String>, CredentialsError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(CredentialsError::Io { path: path.to_owned(), source }),
    }
}

fn write_file(path: &Path, contents: &str) -> Result<(), CredentialsError> {
    std::fs::write(path, contents)
        .map_err(|source| CredentialsError::Io { path: path.to_owned(), source })
}

/// Writes `contents` readable by the owner only, replacing the file at once: a reader (kubectl
/// reading the kubeconfig while `keelson up` restarts, a process reading its token) sees the
/// old contents or the new, never a truncated file.
pub fn write_secret(path: &Path, contents: &str) -> Result<(), CredentialsError> {
    let io = |source| CredentialsError::Io { path: path.to_owned(), source };
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let staged = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&staged)?;
        file.write_all(contents.as_bytes())?;
        std::fs::rename(&staged, path)
    };
    write().map_err(|source| {
        let _ = std::fs::remove_file(&staged);
        io(source)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_persist_across_starts_and_secrets_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create(dir.path(), &[]).unwrap();
        let second = load_or_create(dir.path(), &[]).unwrap();
        assert_eq!(first.ca_pem, second.ca_pem);
        assert_eq!(first.token, second.token);
        assert_eq!(first.token.len(), 64);
        use std::os::unix::fs::PermissionsExt;
        for secret in [CA_KEY, TOKEN] {
            let mode = std::fs::metadata(dir.path().join("pki").join(secret))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{secret}");
        }
        assert!(!format!("{first:?}").contains(&first.token));
    }

    #[test]
    fn a_rewritten_secret_is_never_seen_half_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        let versions = ["a".repeat(64 * 1024), "b".repeat(96 * 1024)];
        write_secret(&path, &versions[0]).unwrap();
        std::thread::scope(|scope| {
            let writer = scope.spawn(|| {
                for i in 0..200 {
                    write_secret(&path, &versions[i % 2]).unwrap();
                }
            });
            while !writer.is_finished() {
                let read = std::fs::read_to_string(&path).unwrap();
                assert!(versions.contains(&read), "read {} bytes", read.len());
            }
        });
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no staged file is left behind");
    }
}
