//! Platforms (`os/architecture[/variant]`, as `docker --platform` and the OCI image index
//! spell them) and the machine type an ELF program was built for, so that a binary given for
//! one platform cannot end up in another platform's image.

use std::fmt;
use std::io::Read;
use std::path::Path;

use serde_json::{Value, json};

/// An image's platform: the `os`, `architecture` and `variant` of its config and of its
/// entry in an image index.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Platform {
    /// `linux`.
    pub os: String,
    /// GOARCH spelling: `amd64`, `arm64`, `ppc64le`, `s390x`, `arm`.
    pub architecture: String,
    /// `v7`, `v8`, … when given.
    pub variant: Option<String>,
}

/// Why a platform text or a platform's binary cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    /// The text is not `os/architecture[/variant]`.
    #[error(
        "{text:?} is not a platform: write os/architecture[/variant], e.g. linux/amd64 or linux/arm64"
    )]
    Syntax {
        /// What was given.
        text: String,
    },
    /// The same platform is listed twice.
    #[error("platform {0} is given twice")]
    Repeated(Platform),
    /// A `PLATFORM=PATH` setting names a platform that is not built.
    #[error("{path}: given for {platform}, which is not among the platforms built ({built})")]
    NotBuilt {
        /// The binary.
        path: String,
        /// Its platform.
        platform: Platform,
        /// The platforms built.
        built: String,
    },
    /// No binary is given for a platform that is built.
    #[error("no {what} for {platform}: give {flag} {platform}=PATH")]
    Missing {
        /// What is missing (`binary`, `server binary`).
        what: &'static str,
        /// The platform.
        platform: Platform,
        /// The flag that gives it.
        flag: &'static str,
    },
    /// The binary was built for another machine.
    #[error("{path}: an ELF program for {found}, given for {platform}")]
    WrongMachine {
        /// The binary.
        path: String,
        /// What its ELF header says.
        found: String,
        /// The platform it was given for.
        platform: Platform,
    },
    /// The binary could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The binary.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

impl Platform {
    /// `linux/amd64`: the platform of every image built without `--platform`.
    pub fn linux_amd64() -> Platform {
        Platform {
            os: "linux".into(),
            architecture: "amd64".into(),
            variant: None,
        }
    }

    /// The platform of the machine this program runs on (Linux, Go's spelling of the
    /// architecture), for picking a manifest of an index when none is asked for.
    pub fn host() -> Platform {
        let architecture = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            "powerpc64" => "ppc64le",
            "s390x" => "s390x",
            "arm" => "arm",
            other => other,
        };
        Platform {
            os: "linux".into(),
            architecture: architecture.into(),
            variant: None,
        }
    }

    /// Parses `os/architecture[/variant]`.
    pub fn parse(text: &str) -> Result<Platform, PlatformError> {
        let parts: Vec<&str> = text.trim().split('/').collect();
        let valid = |part: &&str| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        };
        if !(2..=3).contains(&parts.len()) || !parts.iter().all(valid) {
            return Err(PlatformError::Syntax { text: text.into() });
        }
        Ok(Platform {
            os: parts[0].into(),
            architecture: parts[1].into(),
            variant: parts.get(2).map(|v| v.to_string()),
        })
    }

    /// A comma-separated list, each platform once, in the order given.
    pub fn parse_list(texts: &[String]) -> Result<Vec<Platform>, PlatformError> {
        let mut platforms = Vec::new();
        for text in texts.iter().flat_map(|t| t.split(',')) {
            let platform = Platform::parse(text)?;
            if platforms.contains(&platform) {
                return Err(PlatformError::Repeated(platform));
            }
            platforms.push(platform);
        }
        Ok(platforms)
    }

    /// The `platform` object of an image index entry, and the config's same fields.
    pub fn json(&self) -> Value {
        let mut value = json!({"architecture": self.architecture, "os": self.os});
        if let Some(variant) = &self.variant {
            value["variant"] = json!(variant);
        }
        value
    }

    /// The platform an image config or an index entry's `platform` names, if it names one.
    pub fn of_json(value: &Value) -> Option<Platform> {
        Some(Platform {
            os: value["os"].as_str()?.to_string(),
            architecture: value["architecture"].as_str()?.to_string(),
            variant: value["variant"].as_str().map(str::to_string),
        })
    }

    /// Whether an image of `self` is what a request for `wanted` asks for: the same OS and
    /// architecture, and the same variant when `wanted` names one.
    pub fn satisfies(&self, wanted: &Platform) -> bool {
        self.os == wanted.os
            && self.architecture == wanted.architecture
            && (wanted.variant.is_none() || wanted.variant == self.variant)
    }

    /// The ELF `e_machine` numbers of this architecture's programs.
    fn elf_machine(&self) -> Option<(u16, &'static str)> {
        Some(match self.architecture.as_str() {
            "amd64" => (62, "x86-64"),
            "arm64" => (183, "aarch64"),
            "arm" => (40, "arm"),
            "ppc64le" => (21, "ppc64"),
            "s390x" => (22, "s390"),
            "386" => (3, "i386"),
            "riscv64" => (243, "riscv"),
            _ => return None,
        })
    }

    /// Refuses `program` when it is an ELF file built for another machine than this
    /// platform's (a file that is not ELF, or an architecture not known here, passes).
    pub fn check_program(&self, program: &Path) -> Result<(), PlatformError> {
        let read = |source| PlatformError::Read {
            path: program.display().to_string(),
            source,
        };
        let mut header = [0u8; 20];
        let mut file = std::fs::File::open(program).map_err(read)?;
        let got = file.read(&mut header).map_err(read)?;
        if got < 20 || &header[..4] != b"\x7fELF" {
            return Ok(());
        }
        let machine = match header[5] {
            2 => u16::from_be_bytes([header[18], header[19]]),
            _ => u16::from_le_bytes([header[18], header[19]]),
        };
        let Some((expected, _)) = self.elf_machine() else {
            return Ok(());
        };
        if machine == expected {
            return Ok(());
        }
        let found = [
            Platform::linux_amd64(),
            Platform::parse("linux/arm64").expect("valid"),
            Platform::parse("linux/arm").expect("valid"),
            Platform::parse("linux/ppc64le").expect("valid"),
            Platform::parse("linux/s390x").expect("valid"),
        ]
        .iter()
        .filter_map(Platform::elf_machine)
        .find(|(number, _)| *number == machine)
        .map_or_else(
            || format!("machine {machine}"),
            |(_, name)| name.to_string(),
        );
        Err(PlatformError::WrongMachine {
            path: program.display().to_string(),
            found,
            platform: self.clone(),
        })
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(variant) = &self.variant {
            write!(f, "/{variant}")?;
        }
        Ok(())
    }
}

/// `[PLATFORM=]PATH` settings (`--binary`, `--server-binary`) matched to the platforms built:
/// one path for each, in the platforms' order. A path without a platform is the only one and
/// is for the only platform; each binary's ELF machine must be its platform's.
pub fn binaries_for(
    platforms: &[Platform],
    given: &[String],
    what: &'static str,
    flag: &'static str,
) -> Result<Vec<std::path::PathBuf>, PlatformError> {
    let mut by_platform: Vec<(Option<Platform>, std::path::PathBuf)> = Vec::new();
    for setting in given {
        match setting.split_once('=') {
            Some((platform, path)) if platform.contains('/') && !platform.starts_with('.') => {
                by_platform.push((Some(Platform::parse(platform)?), path.into()))
            }
            _ => by_platform.push((None, setting.into())),
        }
    }
    let built = || {
        platforms
            .iter()
            .map(Platform::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (platform, path) in &by_platform {
        if let Some(platform) = platform
            && !platforms.contains(platform)
        {
            return Err(PlatformError::NotBuilt {
                path: path.display().to_string(),
                platform: platform.clone(),
                built: built(),
            });
        }
    }
    let mut paths = Vec::new();
    for platform in platforms {
        let found = by_platform
            .iter()
            .find(|(p, _)| p.as_ref() == Some(platform))
            .or_else(|| {
                (platforms.len() == 1)
                    .then(|| by_platform.iter().find(|(p, _)| p.is_none()))
                    .flatten()
            })
            .map(|(_, path)| path.clone())
            .ok_or_else(|| PlatformError::Missing {
                what,
                platform: platform.clone(),
                flag,
            })?;
        platform.check_program(&found)?;
        paths.push(found);
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms_parse_and_print_as_docker_spells_them() {
        let arm = Platform::parse("linux/arm/v7").unwrap();
        assert_eq!(arm.to_string(), "linux/arm/v7");
        assert_eq!(
            arm.json(),
            json!({"os": "linux", "architecture": "arm", "variant": "v7"})
        );
        for bad in ["linux", "linux/", "Linux/amd64", "linux/amd64/v8/x", ""] {
            assert!(Platform::parse(bad).is_err(), "{bad}");
        }
        let list = Platform::parse_list(&["linux/amd64,linux/arm64".into()]).unwrap();
        assert_eq!(list.len(), 2);
        assert!(Platform::parse_list(&["linux/amd64".into(), "linux/amd64".into()]).is_err());
        assert!(
            Platform::parse("linux/arm64/v8")
                .unwrap()
                .satisfies(&Platform::parse("linux/arm64").unwrap())
        );
    }

    #[test]
    fn a_binary_of_another_machine_is_refused() {
        // /bin/ls is this machine's (x86-64 on the test machine).
        let amd64 = Platform::linux_amd64();
        let arm64 = Platform::parse("linux/arm64").unwrap();
        if Platform::host() == amd64 {
            amd64.check_program(Path::new("/bin/ls")).unwrap();
            let error = arm64.check_program(Path::new("/bin/ls")).unwrap_err();
            assert_eq!(
                error.to_string(),
                "/bin/ls: an ELF program for x86-64, given for linux/arm64"
            );
        }
        let both = [amd64.clone(), arm64.clone()];
        let error = binaries_for(&both, &["/bin/ls".into()], "binary", "--binary").unwrap_err();
        assert_eq!(
            error.to_string(),
            "no binary for linux/amd64: give --binary linux/amd64=PATH"
        );
        let one = binaries_for(&[amd64], &["/bin/ls".into()], "binary", "--binary").unwrap();
        assert_eq!(one, vec![std::path::PathBuf::from("/bin/ls")]);
        let error =
            binaries_for(&both, &["linux/s390x=/bin/ls".into()], "binary", "--binary").unwrap_err();
        assert!(error.to_string().contains("not among the platforms built"));
    }
}
