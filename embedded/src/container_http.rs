//! HTTP/1.1 requests to containers' own servers (`httpGet` probes, the `proxy` subresource), over
//! TLS without checking their certificates, as a kubelet and the Kubernetes API server reach
//! them: a container's certificate is rarely one this machine trusts.

use std::sync::{Arc, LazyLock};

use hyper::body::{Body, Incoming};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// Why a request to a container's server failed.
pub(crate) type HttpError = Box<dyn std::error::Error + Send + Sync>;

/// Sends `request` over `stream` with HTTP/1.1, over TLS with the server `tls` names when it
/// names one (whatever certificate it shows).
pub(crate) async fn send<B>(
    stream: TcpStream,
    tls: Option<ServerName<'static>>,
    request: hyper::Request<B>,
) -> Result<hyper::Response<Incoming>, HttpError>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<HttpError>,
{
    match tls {
        Some(name) => {
            let connector = tokio_rustls::TlsConnector::from(TRUST_ANY.clone());
            send_over(connector.connect(name, stream).await?, request).await
        }
        None => send_over(stream, request).await,
    }
}

async fn send_over<B>(
    stream: impl AsyncRead + AsyncWrite + Send + Unpin + 'static,
    request: hyper::Request<B>,
) -> Result<hyper::Response<Incoming>, HttpError>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<HttpError>,
{
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    // With upgrades, a `101 Switching Protocols` hands the connection over (the proxy relays it).
    tokio::spawn(connection.with_upgrades());
    Ok(sender.send_request(request).await?)
}

/// A TLS client that takes any certificate.
static TRUST_ANY: LazyLock<Arc<rustls::ClientConfig>> = LazyLock::new(|| {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    Arc::new(config)
});

/// Accepts whatever certificate the server shows, still checking that the server holds its
/// key (the handshake signatures).
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
