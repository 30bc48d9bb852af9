//! `hydro hash-key` and `hydro hash-password`: the secrets of access control, made and hashed.

use anyhow::bail;

/// A new random API key, printed with its hash for `api_key_hashes`.
pub fn hash_key() -> anyhow::Result<()> {
    let key = hydro_server::http::access::new_key();
    say!(
        "key:  {key}\nhash: {}",
        hydro_server::http::access::hash_key(&key)
    );
    Ok(())
}

/// The argon2 hash of a password read from standard input, for `basic_users`.
pub fn hash_password() -> anyhow::Result<()> {
    let mut password = String::new();
    std::io::stdin().read_line(&mut password)?;
    let password = password.trim_end_matches(['\r', '\n']);
    if password.is_empty() {
        bail!("no password on standard input");
    }
    say!(
        "{}",
        hydro_server::http::access::hash_password(password).map_err(anyhow::Error::msg)?
    );
    Ok(())
}
