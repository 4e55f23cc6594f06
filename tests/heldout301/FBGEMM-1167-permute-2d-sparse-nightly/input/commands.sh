conda install -y pytorch cudatoolkit=11.3 -c pytorch-nightly
pip install --pre torchrec_nightly -f https://download.pytorch.org/whl/nightly/torchrec_nightly/index.html
(Torchrec_nightly build the latest FBGemm from source)

torchx run -s local_cwd dist.ddp -j 1x2 --script test_installation.py (inside torchrec github)
