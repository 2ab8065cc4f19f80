//! Authentication by client certificate, as kube-apiserver's x509 authenticator does it: the TLS
//! handshake asks every client for a certificate (optionally, so that bearer-token clients,
//! which send none, still connect), accepts one issued by the server's CA for client
//! authentication, and the request is from the user the certificate's subject names: its common
//! name is the user name, its organizations are the groups.
//!
//! Such certificates come from the CA's signer (`certificates`): a CertificateSigningRequest
//! for `kubernetes.io/kube-apiserver-client`, approved.

use std::sync::Arc;

use axum::middleware::AddExtension;
use axum_server::accept::{Accept, NoDelayAcceptor};
use axum_server::tls_rustls::{RustlsAcceptor, RustlsConfig};
use futures::future::BoxFuture;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tower::Layer;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::tls::Credentials;
use super::users::{AUTHENTICATED, User};

/// The user a connection's client certificate names (`None` without one), added to every
/// request of the connection.
#[derive(Clone, Debug, Default)]
pub(crate) struct PeerUser(pub(crate) Option<Arc<User>>);

/// The server's TLS configuration: its serving certificate, HTTP/2 and HTTP/1.1, and client
/// certificates verified against its CA when a client sends one.
pub(crate) fn tls_config(credentials: &Credentials) -> Result<RustlsConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    let ca = CertificateDer::from_pem_slice(credentials.ca_pem.as_bytes())
        .map_err(|e| format!("the CA certificate: {e}"))?;
    roots.add(ca).map_err(|e| format!("the CA certificate: {e}"))?;
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|e| format!("the client certificate verifier: {e}"))?;
    let chain = CertificateDer::pem_slice_iter(credentials.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the serving certificate: {e}"))?;
    let key = PrivateKeyDer::from_pem_slice(credentials.key_pem.as_bytes())
        .map_err(|e| format!("the serving key: {e}"))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| format!("the serving certificate: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(RustlsConfig::from_config(Arc::new(config)))
}

/// The user a client certificate (DER) names: its subject's common name, with its
/// organizations as groups. `None` when it has no common name, which upstream refuses too.
pub(crate) fn user_of(certificate: &[u8]) -> Option<User> {
    let (_, certificate) = X509Certificate::from_der(certificate).ok()?;
    let subject = certificate.subject();
    let username = subject.iter_common_name().next()?.as_str().ok()?.to_owned();
    if username.is_empty() {
        return None;
    }
    let mut groups: Vec<String> =
        subject.iter_organization().filter_map(|o| o.as_str().ok()).map(str::to_owned).collect();
    groups.push(AUTHENTICATED.to_owned());
    Some(User { username, groups, ..User::default() })
}

/// Accepts TLS connections (with `TCP_NODELAY`) and adds the [`PeerUser`] of the client's
/// certificate to each of their requests.
#[derive(Clone)]
pub(crate) struct PeerAcceptor {
    inner: RustlsAcceptor<NoDelayAcceptor>,
}

impl PeerAcceptor {
    /// An acceptor serving `config`.
    pub(crate) fn new(config: RustlsConfig) -> Self {
        PeerAcceptor { inner: RustlsAcceptor::new(config).acceptor(NoDelayAcceptor::new()) }
    }
}

impl<S: Send + 'static> Accept<TcpStream, S> for PeerAcceptor {
    type Stream = TlsStream<TcpStream>;
    type Service = AddExtension<S, PeerUser>;
    type Future = BoxFuture<'static, std::io::Result<(Self::Stream, Self::Service)>>;

    fn accept(&self, stream: TcpStream, service: S) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(async move {
            let (stream, service) = inner.accept(stream, service).await?;
            let certificate = stream.get_ref().1.peer_certificates().and_then(|c| c.first());
            let user = PeerUser(certificate.and_then(|c| user_of(c)).map(Arc::new));
            Ok((stream, axum::Extension(user).layer(service)))
        })
    }
}

#[cfg(test)]
mod tests {
    use rcgen::{CertificateParams, DnType, KeyPair};

    use super::*;

    fn certificate(subject: &[(DnType, &str)]) -> Vec<u8> {
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (ty, value) in subject {
            params.distinguished_name.push(ty.clone(), *value);
        }
        params.self_signed(&KeyPair::generate().unwrap()).unwrap().der().to_vec()
    }

    #[test]
    fn the_common_name_is_the_user_and_organizations_are_groups() {
        let der = certificate(&[(DnType::CommonName, "jane"), (DnType::OrganizationName, "dev")]);
        let user = user_of(&der).unwrap();
        assert_eq!(user.username, "jane");
        assert_eq!(user.groups, ["dev", AUTHENTICATED]);
    }

    #[test]
    fn a_certificate_without_a_common_name_names_nobody() {
        assert_eq!(user_of(&certificate(&[(DnType::OrganizationName, "dev")])), None);
        assert_eq!(user_of(b"not a certificate"), None);
    }
}
